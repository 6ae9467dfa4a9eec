//! What a profiler span costs: disabled (the default: one relaxed atomic load, no clock) against
//! no span at all, and enabled (two clock reads, one lock, the path's statistics updated), each
//! around the same small unit of work (hashing 64 bytes), so the ratios read as overhead.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use scalechain_types::{profile, HashKind};

fn spans(c: &mut Criterion) {
    let data = [7u8; 64];
    let mut group = c.benchmark_group("profile");
    group.bench_function("no_span", |b| b.iter(|| HashKind::Sha256.hash(black_box(&data))));
    profile::set_enabled(false);
    group.bench_function("span_disabled", |b| {
        b.iter(|| {
            let _s = profile::span("bench.hash");
            HashKind::Sha256.hash(black_box(&data))
        })
    });
    profile::set_enabled(true);
    group.bench_function("span_enabled", |b| {
        b.iter(|| {
            let _s = profile::span("bench.hash");
            HashKind::Sha256.hash(black_box(&data))
        })
    });
    profile::set_enabled(false);
    group.finish();
}

criterion_group!(benches, spans);
criterion_main!(benches);
