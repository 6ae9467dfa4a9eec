//! The conformance vectors of `docs/PROTOCOL.md` §13.8, read out of the document itself: every
//! sync request and response kind, a framed request, a gossiped transaction batch and its
//! message id are encoded here and compared with the hex the document prints, and decoded back
//! from it; the protocol names of the devnet chain are compared with the document's. The
//! document and the code cannot drift apart without this test failing.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Params};
use scalechain_p2p::msg::{
    message_id, CompactBlock, Hello, ProtocolNames, Request, Response, Role, TxBatch, PROTOCOL_VERSION,
};
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{
    Amount, Block, Hash, HashKind, Header, Lock, OutPoint, Scheme, Target, Tx, TxIn, TxKind, TxOut, Witness,
};

fn document() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/PROTOCOL.md");
    std::fs::read_to_string(path).unwrap()
}

/// Every fenced block of the document whose info string is `vector NAME`: its hex digits, with
/// whitespace and `#` comments left out.
fn document_vectors(doc: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.trim().strip_prefix("```vector ") else { continue };
        let mut hex_digits = String::new();
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            let data = l.split('#').next().unwrap_or("");
            hex_digits.extend(data.chars().filter(|c| !c.is_whitespace()));
        }
        let bytes = hex::decode(&hex_digits).unwrap_or_else(|e| panic!("vector {name}: {e}"));
        assert!(out.insert(name.trim().to_string(), bytes).is_none(), "vector {name} twice");
    }
    out
}

fn devnet() -> (Params, Hash) {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let id = genesis_block(&p).hash(p.hash);
    (p, id)
}

/// Appendix A.2's transfer: premine output 0, signed by devnet key 0, paying 999,999,000 to
/// devnet key 1.
fn transfer() -> Tx {
    let (p, chain_id) = devnet();
    let genesis = genesis_block(&p);
    let (k0, k1) = (devnet_premine_key(SigMode::Ed25519, 0), devnet_premine_key(SigMode::Ed25519, 1));
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn {
            prev: OutPoint { txid: genesis.txs[0].txid(p.hash), index: 0 },
            witness: Witness { pubkey: k0.public(), signature: [0; 64] },
        }],
        outputs: vec![TxOut {
            value: Amount::new(999_999_000).unwrap(),
            lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: k1.public().hash(p.hash) },
        }],
        data: vec![],
    };
    tx.sign_inputs_with(p.hash, &chain_id, &k0);
    tx
}

/// A small block (not a valid one: an encoding example): a header on the devnet genesis and a
/// coinbase paying 50 to devnet key 1.
fn small_block() -> Block {
    let (p, chain_id) = devnet();
    let k1 = devnet_premine_key(SigMode::Ed25519, 1);
    let coinbase = Tx::coinbase(
        1,
        vec![TxOut {
            value: Amount::new(50).unwrap(),
            lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: k1.public().hash(p.hash) },
        }],
    );
    let header = Header {
        version: 1,
        height: 1,
        prev_hash: chain_id,
        merkle_root: Hash([0x22; 32]),
        time: 1_700_000_001_000,
        target: Target::from_bits(240),
        nonce: 7,
    };
    Block { header, txs: vec![coinbase] }
}

fn hello() -> Hello {
    Hello {
        version: PROTOCOL_VERSION,
        chain_id: devnet().1,
        role: Role::Miner,
        tip_height: 5,
        tip_hash: Hash([0xaa; 32]),
        agent: "scalechain/0.1.0".into(),
    }
}

fn requests() -> Vec<(&'static str, Request)> {
    let (p, chain_id) = devnet();
    let txid = transfer().txid(p.hash);
    vec![
        ("request-hello", Request::Hello(hello())),
        (
            "request-get-headers",
            Request::GetHeaders { locator: vec![Hash([0xaa; 32]), chain_id], max: 2_000 },
        ),
        ("request-get-blocks", Request::GetBlocks(vec![chain_id])),
        ("request-get-txs", Request::GetTxs(vec![txid])),
        ("request-get-pool-txids", Request::GetPoolTxids { from: Hash([0; 32]), max: 4_096 }),
        ("request-get-block-txs", Request::GetBlockTxs { block: Hash([0xaa; 32]), indexes: vec![1, 3] }),
    ]
}

fn responses() -> Vec<(&'static str, Response)> {
    let (p, _) = devnet();
    let genesis = genesis_block(&p);
    let tx = transfer();
    vec![
        ("response-hello", Response::Hello(Hello { role: Role::Peer, agent: "other/2".into(), ..hello() })),
        ("response-headers", Response::Headers(vec![genesis.header])),
        ("response-blocks", Response::Blocks(vec![small_block()])),
        ("response-txs", Response::Txs(vec![tx.clone()])),
        ("response-refused", Response::Refused("rate limit".into())),
        ("response-pool-txids", Response::PoolTxids(vec![tx.txid(p.hash)])),
        ("response-block-txs", Response::BlockTxs(vec![tx.clone()])),
    ]
}

/// Every vector the code produces, by name.
fn code_vectors() -> BTreeMap<String, Vec<u8>> {
    let mut v: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (name, r) in requests() {
        v.insert(name.into(), r.encode());
    }
    for (name, r) in responses() {
        v.insert(name.into(), r.encode());
    }
    let body = Request::GetTxs(vec![transfer().txid(HashKind::Sha256)]).encode();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    v.insert("frame-get-txs".into(), frame);
    let batch = TxBatch(vec![transfer()]).encode();
    v.insert("gossip-message-id".into(), message_id(&batch).0.to_vec());
    v.insert("gossip-txs".into(), batch);
    v.insert("gossip-block".into(), small_block().encode());
    v.insert("gossip-compact-block".into(), compact_block().encode());
    v
}

/// The small block with Appendix A.2's transfer after its coinbase, in compact form.
fn compact_block() -> CompactBlock {
    let mut b = small_block();
    b.txs.push(transfer());
    CompactBlock::of(&b, HashKind::Sha256).unwrap()
}

#[test]
fn the_documents_vectors_are_what_the_code_encodes_and_decodes() {
    let doc = document_vectors(&document());
    let code = code_vectors();
    let show = |m: &BTreeMap<String, Vec<u8>>| -> String {
        m.iter().map(|(k, v)| format!("{k}\n{}\n", hex::encode(v))).collect()
    };
    assert_eq!(
        doc.keys().collect::<Vec<_>>(),
        code.keys().collect::<Vec<_>>(),
        "the document's vectors are not the code's; the code's:\n{}",
        show(&code)
    );
    for (name, bytes) in &code {
        assert_eq!(hex::encode(&doc[name]), hex::encode(bytes), "vector {name}");
    }
    // Decoding the document's bytes gives the values back.
    for (name, r) in requests() {
        assert_eq!(Request::decode(&doc[name]).unwrap(), r, "{name}");
    }
    for (name, r) in responses() {
        assert_eq!(Response::decode(&doc[name]).unwrap(), r, "{name}");
    }
    assert_eq!(TxBatch::decode(&doc["gossip-txs"]).unwrap(), TxBatch(vec![transfer()]));
    assert_eq!(Block::decode(&doc["gossip-block"]).unwrap(), small_block());
    assert_eq!(CompactBlock::decode(&doc["gossip-compact-block"]).unwrap(), compact_block());
    assert_eq!(
        transfer().wtxid(HashKind::Sha256),
        HashKind::Sha256.hash(&transfer().encode()),
        "a wtxid is the hash of the whole encoding"
    );
    // The transfer is Appendix A.2's.
    assert_eq!(
        transfer().txid(HashKind::Sha256).to_string(),
        "2025f5c5419ea3b963f9c2892260005f0bcb7b3b75a68be14676459802b05110"
    );
}

#[test]
fn the_documents_protocol_names_and_role_bytes_are_the_codes() {
    let doc = document();
    let names = ProtocolNames::for_chain(&devnet().1);
    for name in [
        &names.txs_topic,
        &names.blocks_topic,
        &names.compact_blocks_topic,
        &names.sync,
        &names.kad,
        &names.identify,
    ] {
        assert!(doc.contains(&format!("`{name}`")), "{name} is not in §13");
    }
    for (role, byte) in [(Role::Bootstrap, 0u8), (Role::Peer, 1), (Role::Miner, 2)] {
        let mut h = hello();
        h.role = role;
        assert_eq!(h.encode()[4 + 32], byte);
        assert!(doc.contains(&format!("| `{byte}` | `{}` |", role.name())), "role {} in §13.2", role.name());
    }
}
