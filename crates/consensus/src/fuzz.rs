//! Fuzz targets: one per decoder, and one for block validation.
//!
//! Each takes arbitrary bytes and must never panic. Decoders must also round-trip: whatever
//! decodes re-encodes to exactly the input (the encoding is canonical). The `fuzz/` crate feeds
//! these functions from cargo-fuzz (nightly); a stable test drives them over a seed corpus,
//! mutations of it, and proptest inputs, so CI exercises them without a nightly toolchain.

use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{Block, HashKind, Header, Tx};

use crate::app::Apps;
use crate::check::{check_block, check_header_context};
use crate::connect::{connect_block, genesis_changes, BlockUndo, ConnectCtx};
use crate::params::{genesis_block, Params, SigMode};
use crate::tree::BlockTree;
use crate::utxo::{Coin, UtxoSet};
use crate::verify::VerifyConfig;

fn round_trip<T: Decode + Encode>(data: &[u8]) {
    if let Ok(v) = T::decode(data) {
        assert_eq!(v.encode(), data, "decoding is canonical: re-encoding gives the input");
    }
}

/// Transaction decoder.
pub fn decode_tx(data: &[u8]) {
    round_trip::<Tx>(data);
}

/// Header decoder.
pub fn decode_header(data: &[u8]) {
    round_trip::<Header>(data);
}

/// Block decoder.
pub fn decode_block(data: &[u8]) {
    round_trip::<Block>(data);
}

/// Chain-parameter decoder (genesis data).
pub fn decode_params(data: &[u8]) {
    round_trip::<Params>(data);
}

/// Undo-data decoder (disk format).
pub fn decode_undo(data: &[u8]) {
    round_trip::<BlockUndo>(data);
}

/// UTXO record decoder (disk format).
pub fn decode_coin(data: &[u8]) {
    round_trip::<Coin>(data);
}

/// Block validation: decodes a block and runs every stage against the devnet genesis state.
/// Whatever the bytes, validation returns a verdict without panicking, and an accepted block's
/// diff never creates value beyond subsidy + fees.
pub fn validate_block(data: &[u8]) {
    let Ok(block) = Block::decode(data) else { return };
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let genesis = genesis_block(&p);
    let apps = Apps::none();
    let Ok(checked) = check_block(&block, &p, &apps) else { return };
    let tree = BlockTree::new(p.hash, genesis.header);
    if check_header_context(&p, &block.header, &genesis.header, &tree.branch(tree.genesis()), u64::MAX / 2)
        .is_err()
    {
        return;
    }
    let mut utxos = UtxoSet::new();
    genesis_changes(&p, &genesis).apply_utxos(&mut utxos);
    let chain_id = genesis.hash(p.hash);
    let cfg = VerifyConfig::parallel([1; 32]);
    let ctx = ConnectCtx::new(&p, &chain_id, &apps, &cfg);
    let state = std::collections::BTreeMap::new();
    if let Ok(diff) = connect_block(&ctx, &checked, &utxos, &state) {
        let before = utxos.total_value();
        diff.changes.apply_utxos(&mut utxos);
        assert!(utxos.total_value() <= before + u128::from(p.subsidy(block.header.height).get()));
    }
}

/// A fuzz target: takes arbitrary bytes, panics only on a bug.
pub type Target = fn(&[u8]);

/// Every target, by name (for the stable driver).
pub const TARGETS: &[(&str, Target)] = &[
    ("decode_tx", decode_tx),
    ("decode_header", decode_header),
    ("decode_block", decode_block),
    ("decode_params", decode_params),
    ("decode_undo", decode_undo),
    ("decode_coin", decode_coin),
    ("validate_block", validate_block),
];
