//! Block validation of a block of 4,096 one-input, one-output Ed25519 workload transfers (plus
//! its coinbase): the stateless rules of each transaction (`check::check_tx`), the stateless
//! rules of the block (`check::check_block`: proof of work, Merkle root, txids, every
//! transaction) and connection to the UTXO view in each verification mode
//! (`connect::connect_block`: the contextual pass and the signature jobs).
//! Parallel stages use the global rayon pool (set its size with `RAYON_NUM_THREADS`).

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use scalechain_consensus::check::{check_block, check_tx};
use scalechain_consensus::connect::{connect_block, ConnectCtx};
use scalechain_consensus::{genesis_block, Apps, Params, SigMode, VerifyConfig, VerifyMode};
use scalechain_types::HashKind;
use scalechain_workload::fixed::{self, transfers, Spec};

/// Workload transactions in the block (besides the coinbase).
const TXS: usize = 4096;

/// Seed of the workload's keys and coins.
const WORKLOAD_SEED: u64 = 0xb10c;

fn block(c: &mut Criterion) {
    let mut params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    params.max_block_txs = 1 << 20;
    params.max_block_bytes = 1 << 30;
    let genesis = genesis_block(&params);
    let chain_id = genesis.hash(params.hash);
    let w = transfers(&params, &chain_id, &Spec::simple(TXS, WORKLOAD_SEED));
    // The easiest target the chain allows: mining takes a few nonces.
    let block = fixed::block(&params, &genesis.header, &w.txs, params.pow_limit);
    let apps = Apps::none();
    let app_state: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let checked = check_block(&block, &params, &apps).expect("the workload block passes the stateless rules");
    let id = |extra: &str| BenchmarkId::from_parameter(format!("{extra}txs={TXS}"));

    let mut group = c.benchmark_group("check::check_tx");
    group.throughput(Throughput::Elements(TXS as u64));
    group.bench_function(id(""), |b| {
        b.iter(|| black_box(&w.txs).iter().try_for_each(|tx| check_tx(tx, &params, &apps)))
    });
    group.finish();

    let mut group = c.benchmark_group("check::check_block");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(block.txs.len() as u64));
    group.bench_function(id(""), |b| b.iter(|| check_block(black_box(&block), &params, &apps)));
    group.finish();

    let mut group = c.benchmark_group("connect::connect_block");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(block.txs.len() as u64));
    for mode in VerifyMode::ALL {
        let name = mode.name();
        let verify = VerifyConfig { mode, seed: [4; 32], batch_size: 256 };
        let ctx = ConnectCtx::new(&params, &chain_id, &apps, &verify);
        let diff = connect_block(&ctx, &checked, &w.utxos, &app_state)
            .expect("the workload block connects to its UTXO set");
        assert_eq!(diff.changes.remove.len(), TXS, "every workload coin is spent");
        group.bench_function(id(&format!("mode={name},")), |b| {
            b.iter(|| connect_block(&ctx, black_box(&checked), &w.utxos, &app_state))
        });
    }
    group.finish();
}

criterion_group!(benches, block);
criterion_main!(benches);
