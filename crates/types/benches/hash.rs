//! Hashing throughput of the chain's three hash functions at the sizes that matter: 25 B (a
//! short preimage), 64 B (a Merkle node), 1 KiB (a large transaction) and 1 MiB (a large block).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scalechain_types::HashKind;

/// Input sizes in bytes.
const SIZES: [usize; 4] = [25, 64, 1 << 10, 1 << 20];

fn hash(c: &mut Criterion) {
    for kind in HashKind::ALL {
        let mut group = c.benchmark_group(format!("hash::{}", kind.name()));
        for size in SIZES {
            // Deterministic, non-constant bytes.
            let data: Vec<u8> = (0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(7)).collect();
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(BenchmarkId::from_parameter(format!("bytes={size}")), &data, |b, data| {
                b.iter(|| kind.hash(black_box(data)))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, hash);
criterion_main!(benches);
