//! Admission throughput against its bound, and the cost of admitting into a large pool.
//!
//! - `mempool::admit`: a 4,096-transaction batch of one-input, one-output Ed25519 `transfers`
//!   admitted into an empty pool (every signature verified: the pool and its signature cache
//!   are new each iteration), beside the raw `verify_txs` call on the same transactions, the
//!   bound admission cannot beat. After Criterion's groups the bench prints the ratio of their
//!   medians, measured interleaved in the same run, and how the gap splits: the CPU admission
//!   used against the raw call's, and the share of the cores each kept busy.
//! - `mempool::pool-size`: admitting a 256-transaction batch and removing it again (as its
//!   block would) in pools of 1k, 10k and 100k transactions, signatures cached (so what is
//!   left is the ledger checks, the pool's bookkeeping and the snapshot publication); flat
//!   timings across sizes show that publication does not copy the pool. Beside it, what
//!   copying a 100k-entry map once per batch would cost, and what a miner's 1 MB template
//!   costs at each size (a reader: it runs on a snapshot, beside the writer).
//!
//! - `mempool::remove-block`: taking a block's 4,096 transactions out of a pool that holds
//!   exactly them, with the pool hashing the block's txids (`remove_block`) and with the txids
//!   its validation computed handed in (`remove_block_txids`, as the replica does): the
//!   difference is one txid pass over the block.
//!
//! `parallel` uses the global rayon pool (set its size with `RAYON_NUM_THREADS`). Under
//! `--test` (smoke mode) the sizes shrink.

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput};
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::{genesis_block, verify_txs, Apps, Params, SigMode, TxEnv, VerifyConfig};
use scalechain_mempool::{Mempool, MempoolConfig};
use scalechain_procfs::threads_cpu_seconds;
use scalechain_types::{Block, Hash, HashKind, Tx};
use scalechain_workload::fixed::{transfers, Spec, Transfers};

/// The admission batch.
const BATCH: usize = 4096;
/// The batch admitted into pools of each size.
const SMALL_BATCH: usize = 256;
/// Seed of the workload's keys and coins.
const SEED: u64 = 0x3e3;

struct Fixture {
    params: Params,
    chain_id: Hash,
    apps: Apps,
    verify: VerifyConfig,
    app_state: BTreeMap<Vec<u8>, Vec<u8>>,
    w: Transfers,
}

impl Fixture {
    fn new(n: usize) -> Fixture {
        let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let chain_id = Hash([1; 32]);
        let w = transfers(&params, &chain_id, &Spec::simple(n, SEED));
        Fixture {
            params,
            chain_id,
            apps: Apps::none(),
            verify: VerifyConfig::parallel([4; 32]),
            app_state: BTreeMap::new(),
            w,
        }
    }

    /// Admission and the raw check judge in the same environment.
    fn env(&self) -> TxEnv<'_> {
        let ctx = ConnectCtx::new(&self.params, &self.chain_id, &self.apps, &self.verify);
        TxEnv { ctx, view: &self.w.utxos, app_state: &self.app_state, height: 1, time: 0 }
    }

    fn raw(&self, txs: &[Tx]) -> usize {
        verify_txs(&self.env(), txs).iter().filter(|v| v.is_ok()).count()
    }

    fn pool(&self) -> Mempool {
        Mempool::new(
            self.params.hash,
            MempoolConfig { max_txs: 1 << 20, max_bytes: 1 << 30, ..Default::default() },
        )
    }

    fn admit_fresh(&self, txs: Vec<Tx>) -> (Mempool, usize) {
        let pool = self.pool();
        let ok = pool.admit(&self.env(), txs).iter().filter(|v| v.is_ok()).count();
        (pool, ok)
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn admit_vs_raw(c: &mut Criterion, n: usize) -> Fixture {
    let f = Fixture::new(n);
    assert_eq!(f.raw(&f.w.txs), n, "every workload transaction passes verify_txs");
    assert_eq!(f.admit_fresh(f.w.txs.clone()).1, n, "and admission");
    let mut g = c.benchmark_group("mempool::admit");
    g.sample_size(10).sampling_mode(SamplingMode::Flat).throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("raw-verify_txs", n), |b| b.iter(|| f.raw(black_box(&f.w.txs))));
    g.bench_function(BenchmarkId::new("admit-empty-pool", n), |b| {
        b.iter_batched(|| f.w.txs.clone(), |txs| f.admit_fresh(txs), BatchSize::PerIteration)
    });
    g.finish();
    f
}

/// The ratio of medians, raw and admission interleaved so that both see the same machine; and
/// over all rounds, the CPU each used against the raw call's and the share of the cores each
/// kept busy (so that a gap splits into work added and cores left idle).
fn report_ratio(f: &Fixture, rounds: usize) {
    let (mut raw, mut admit) = (Vec::new(), Vec::new());
    // (CPU seconds, wall seconds) over the rounds.
    let (mut raw_use, mut admit_use) = ((0.0, 0.0), (0.0, 0.0));
    for _ in 0..rounds {
        let c = threads_cpu_seconds("self");
        let t = Instant::now();
        black_box(f.raw(&f.w.txs));
        raw.push(t.elapsed());
        raw_use = (raw_use.0 + threads_cpu_seconds("self") - c, raw_use.1 + t.elapsed().as_secs_f64());
        let txs = f.w.txs.clone();
        let c = threads_cpu_seconds("self");
        let t = Instant::now();
        let out = f.admit_fresh(txs);
        admit.push(t.elapsed());
        admit_use = (admit_use.0 + threads_cpu_seconds("self") - c, admit_use.1 + t.elapsed().as_secs_f64());
        drop(black_box(out));
    }
    let (raw, admit) = (median(raw), median(admit));
    let n = f.w.txs.len() as f64;
    let threads = rayon::current_num_threads();
    let busy = |(cpu, wall): (f64, f64)| cpu / (wall * threads as f64).max(f64::MIN_POSITIVE);
    println!(
        "mempool admission of {} transfers: {:.1} ms ({:.0} tx/s); raw verify_txs: {:.1} ms ({:.0} tx/s); \
         admission/raw time ratio {:.3} (medians of {rounds} interleaved rounds, {threads} rayon threads); \
         admission/raw CPU {:.3}; cores busy: admission {:.3}, raw {:.3}",
        f.w.txs.len(),
        admit.as_secs_f64() * 1e3,
        n / admit.as_secs_f64(),
        raw.as_secs_f64() * 1e3,
        n / raw.as_secs_f64(),
        admit.as_secs_f64() / raw.as_secs_f64(),
        admit_use.0 / raw_use.0.max(f64::MIN_POSITIVE),
        busy(admit_use),
        busy(raw_use),
    );
}

fn pool_size(c: &mut Criterion, sizes: &[usize]) {
    let max = sizes.iter().copied().max().unwrap_or(0);
    let f = Fixture::new(max + SMALL_BATCH);
    let (base, batch) = f.w.txs.split_at(max);
    let block = Block { header: genesis_block(&f.params).header, txs: batch.to_vec() };
    let mut g = c.benchmark_group("mempool::pool-size");
    g.sample_size(20).throughput(Throughput::Elements(SMALL_BATCH as u64));
    for &size in sizes {
        let pool = f.pool();
        for chunk in base[..size].chunks(BATCH) {
            assert!(pool.admit(&f.env(), chunk.to_vec()).iter().all(|v| v.is_ok()));
        }
        // Warm the signature cache with the batch.
        assert!(pool.admit(&f.env(), batch.to_vec()).iter().all(|v| v.is_ok()));
        assert_eq!(pool.remove_block(&block, &f.apps, &f.params).confirmed, SMALL_BATCH);
        assert_eq!(pool.len(), size);
        g.bench_function(BenchmarkId::new("admit-and-remove-256", size), |b| {
            b.iter_batched(
                || batch.to_vec(),
                |txs| {
                    let v = pool.admit(&f.env(), txs);
                    let r = pool.remove_block(&block, &f.apps, &f.params);
                    (v, r)
                },
                BatchSize::PerIteration,
            )
        });
        // What a miner asks for: a 1 MB body out of the whole pool.
        g.bench_function(BenchmarkId::new("template-1MB", size), |b| {
            b.iter(|| pool.template(1 << 20, usize::MAX))
        });
    }
    let naive: HashMap<Hash, Arc<Tx>> =
        base.iter().map(|t| (t.txid(f.params.hash), Arc::new(t.clone()))).collect();
    g.bench_function(BenchmarkId::new("copy-whole-map-instead", max), |b| b.iter(|| naive.clone()));
    g.finish();
}

fn remove_block(c: &mut Criterion, n: usize) {
    let f = Fixture::new(n);
    let block = Block { header: genesis_block(&f.params).header, txs: f.w.txs.clone() };
    let txids: Vec<Hash> = block.txs.iter().map(|t| t.txid(f.params.hash)).collect();
    let pool = f.pool();
    let fill = || {
        assert!(pool.admit(&f.env(), f.w.txs.clone()).iter().all(|v| v.is_ok()));
    };
    let mut g = c.benchmark_group("mempool::remove-block");
    g.sample_size(20).throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("hashing", n), |b| {
        b.iter_batched(fill, |()| pool.remove_block(&block, &f.apps, &f.params), BatchSize::PerIteration)
    });
    g.bench_function(BenchmarkId::new("txids-given", n), |b| {
        b.iter_batched(
            fill,
            |()| pool.remove_block_txids(&block, &txids, &f.apps, &f.params),
            BatchSize::PerIteration,
        )
    });
    g.finish();
    assert!(pool.is_empty());
}

fn main() {
    // Criterion's rule: test mode under `--test`, or without `--bench` (`cargo test --benches`).
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let smoke = has("--test") || !has("--bench");
    let mut c = Criterion::default().configure_from_args();
    let f = admit_vs_raw(&mut c, if smoke { 256 } else { BATCH });
    if !has("--list") {
        report_ratio(&f, if smoke { 1 } else { 15 });
        if std::env::var_os("ADMIT_PROFILE").is_some() {
            scalechain_types::profile::set_enabled(true);
            report_ratio(&f, 15);
            print!("{}", scalechain_types::profile::report(&scalechain_types::profile::snapshot()));
        }
    }
    drop(f);
    pool_size(&mut c, if smoke { &[1_000] } else { &[1_000, 10_000, 100_000] });
    remove_block(&mut c, if smoke { 256 } else { BATCH });
    c.final_summary();
}
