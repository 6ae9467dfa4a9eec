//! Ballot costs of the `elgamal` scheme: casting (voter side) and verifying (validator side),
//! singly and in batches. `before::*` is the verification of commit 42c810c (every challenge
//! recompressing its points, the sum proof's α and β repeated in the batch), kept here so that
//! one run measures the change: `verify_wire`/`verify_wire_ballots` hash the wire bytes of a
//! decoded ballot instead.
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

#[path = "common/cputime.rs"]
mod cputime;
use cputime::ThreadCpu;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use scalechain_voting::elgamal::{
    cast, keygen, verify_ballot, verify_ballots, verify_wire, verify_wire_ballots, Statement, WireBallot,
};

/// The single and batch verification of commit 42c810c, verbatim but for paths.
mod before {
    use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT as G;
    use curve25519_dalek::ristretto::RistrettoPoint;
    use curve25519_dalek::scalar::Scalar;
    use curve25519_dalek::traits::{Identity, VartimeMultiscalarMul};
    use rand_core::{CryptoRng, Rng};
    use scalechain_voting::elgamal::{Ballot, Ciphertext, PublicKey, Statement};
    use sha2::{Digest, Sha512};

    const TAG: &[u8] = b"scalechain/vote/elgamal/v1";

    fn random_scalar<R: Rng + CryptoRng>(rng: &mut R) -> Scalar {
        let mut b = [0u8; 64];
        rng.fill_bytes(&mut b);
        Scalar::from_bytes_mod_order_wide(&b)
    }

    fn challenge(st: &Statement<'_>, label: &[u8], points: &[&RistrettoPoint], extra: &[u8]) -> Scalar {
        let mut h = Sha512::new();
        let mut part = |b: &[u8]| {
            h.update((b.len() as u32).to_le_bytes());
            h.update(b);
        };
        part(TAG);
        part(label);
        part(st.election);
        part(st.voter);
        part(extra);
        for p in points {
            part(p.compress().as_bytes());
        }
        let out: [u8; 64] = h.finalize().into();
        Scalar::from_bytes_mod_order_wide(&out)
    }

    fn bit_commitments(
        k: &RistrettoPoint,
        ct: &Ciphertext,
        bit: u64,
        c: &Scalar,
        s: &Scalar,
    ) -> [RistrettoPoint; 2] {
        let shifted = if bit == 1 { ct.beta - G } else { ct.beta };
        let a = RistrettoPoint::vartime_double_scalar_mul_basepoint(&(-c), &ct.alpha, s);
        let b = RistrettoPoint::vartime_multiscalar_mul([*s, -c], [*k, shifted]);
        [a, b]
    }

    fn sums(cts: &[Ciphertext]) -> (RistrettoPoint, RistrettoPoint) {
        let a = cts.iter().map(|c| c.alpha).sum::<RistrettoPoint>();
        let b = cts.iter().map(|c| c.beta).sum::<RistrettoPoint>() - G;
        (a, b)
    }

    fn challenges(
        k: &PublicKey,
        st: &Statement<'_>,
        ballot: &Ballot,
        (a, b): &(RistrettoPoint, RistrettoPoint),
    ) -> (Vec<[Scalar; 2]>, Scalar) {
        let bits = ballot
            .cts
            .iter()
            .zip(&ballot.bits)
            .enumerate()
            .map(|(j, (ct, p))| {
                let c = challenge(
                    st,
                    b"bit",
                    &[&k.0, &ct.alpha, &ct.beta, &p.a[0], &p.b[0], &p.a[1], &p.b[1]],
                    &(j as u32).to_le_bytes(),
                );
                [p.c0, c - p.c0]
            })
            .collect();
        (bits, challenge(st, b"sum", &[&k.0, a, b, &ballot.sum.t[0], &ballot.sum.t[1]], &[]))
    }

    pub fn verify_ballot(k: &PublicKey, st: &Statement<'_>, ballot: &Ballot) -> bool {
        let (a, b) = sums(&ballot.cts);
        let (cs, c) = challenges(k, st, ballot, &(a, b));
        for ((ct, p), c) in ballot.cts.iter().zip(&ballot.bits).zip(&cs) {
            for (bit, (cb, sb)) in c.iter().zip(&p.s).enumerate() {
                let [a, b] = bit_commitments(&k.0, ct, bit as u64, cb, sb);
                if a != p.a[bit] || b != p.b[bit] {
                    return false;
                }
            }
        }
        let s = ballot.sum.s;
        let t1 = RistrettoPoint::vartime_double_scalar_mul_basepoint(&(-c), &a, &s);
        let t2 = RistrettoPoint::vartime_multiscalar_mul([s, -c], [k.0, b]);
        t1 == ballot.sum.t[0] && t2 == ballot.sum.t[1]
    }

    pub fn verify_ballots<R: Rng + CryptoRng>(
        k: &PublicKey,
        items: &[(Statement<'_>, &Ballot)],
        rng: &mut R,
    ) -> bool {
        let mut scalars: Vec<Scalar> = Vec::new();
        let mut points: Vec<RistrettoPoint> = Vec::new();
        let (mut g, mut kk) = (Scalar::ZERO, Scalar::ZERO);
        for (st, ballot) in items {
            let (cs, c) = challenges(k, st, ballot, &sums(&ballot.cts));
            for ((ct, p), c) in ballot.cts.iter().zip(&ballot.bits).zip(&cs) {
                let z: [Scalar; 4] =
                    [random_scalar(rng), random_scalar(rng), random_scalar(rng), random_scalar(rng)];
                g += z[0] * p.s[0] + z[2] * p.s[1] + z[3] * c[1];
                kk += z[1] * p.s[0] + z[3] * p.s[1];
                scalars.extend([
                    -(z[0] * c[0] + z[2] * c[1]),
                    -(z[1] * c[0] + z[3] * c[1]),
                    -z[0],
                    -z[1],
                    -z[2],
                    -z[3],
                ]);
                points.extend([ct.alpha, ct.beta, p.a[0], p.b[0], p.a[1], p.b[1]]);
            }
            let z = [random_scalar(rng), random_scalar(rng)];
            let s = ballot.sum.s;
            g += z[0] * s + z[1] * c;
            kk += z[1] * s;
            for ct in &ballot.cts {
                scalars.extend([-(z[0] * c), -(z[1] * c)]);
                points.extend([ct.alpha, ct.beta]);
            }
            scalars.extend([-z[0], -z[1]]);
            points.extend([ballot.sum.t[0], ballot.sum.t[1]]);
        }
        scalars.extend([g, kk]);
        points.extend([G, k.0]);
        RistrettoPoint::vartime_multiscalar_mul(&scalars, &points) == RistrettoPoint::identity()
    }
}

fn bench(c: &mut Criterion<ThreadCpu>) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (_, k) = keygen(&mut rng);
    let st = Statement { election: &[1; 32], voter: &[2; 32] };
    for l in [2usize, 4, 8] {
        let ballot = cast(&k, &st, 0, l, &mut rng).unwrap();
        let wire = WireBallot::decode(&ballot.encode()).unwrap();
        let mut g = c.benchmark_group("elgamal::verify_single");
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("before", format!("candidates={l}")), |b| {
            b.iter(|| assert!(before::verify_ballot(&k, &st, &ballot)))
        });
        g.bench_function(BenchmarkId::new("verify_ballot", format!("candidates={l}")), |b| {
            b.iter(|| verify_ballot(&k, &st, &ballot, l).unwrap())
        });
        g.bench_function(BenchmarkId::new("verify_wire", format!("candidates={l}")), |b| {
            b.iter(|| verify_wire(&k, &st, &wire, l).unwrap())
        });
        g.bench_function(BenchmarkId::new("decode+verify_wire", format!("candidates={l}")), |b| {
            let bytes = ballot.encode();
            b.iter(|| verify_wire(&k, &st, &WireBallot::decode(&bytes).unwrap(), l).unwrap())
        });
        g.finish();
        let voters: Vec<[u8; 32]> = (0..256u32)
            .map(|i| {
                let mut v = [0u8; 32];
                v[..4].copy_from_slice(&i.to_le_bytes());
                v
            })
            .collect();
        let sts: Vec<Statement<'_>> =
            voters.iter().map(|v| Statement { election: &[1; 32], voter: v }).collect();
        let ballots: Vec<_> = sts.iter().map(|s| cast(&k, s, 0, l, &mut rng).unwrap()).collect();
        let wires: Vec<_> = ballots.iter().map(|b| WireBallot::decode(&b.encode()).unwrap()).collect();
        let items: Vec<_> = sts.iter().copied().zip(ballots.iter()).collect();
        let wire_items: Vec<_> = sts.iter().copied().zip(wires.iter()).collect();
        let mut g = c.benchmark_group("elgamal::verify_batch");
        g.throughput(Throughput::Elements(items.len() as u64));
        g.sample_size(10);
        g.bench_function(BenchmarkId::new("before", format!("candidates={l},n=256")), |b| {
            b.iter(|| assert!(before::verify_ballots(&k, &items, &mut rng)))
        });
        g.bench_function(BenchmarkId::new("verify_ballots", format!("candidates={l},n=256")), |b| {
            b.iter(|| assert!(verify_ballots(&k, &items, l, &mut rng).iter().all(Result::is_ok)))
        });
        g.bench_function(BenchmarkId::new("verify_wire_ballots", format!("candidates={l},n=256")), |b| {
            b.iter(|| assert!(verify_wire_ballots(&k, &wire_items, l, &mut rng).iter().all(Result::is_ok)))
        });
        g.finish();
        let mut g = c.benchmark_group("elgamal::cast");
        g.bench_function(BenchmarkId::from_parameter(format!("candidates={l}")), |b| {
            b.iter(|| cast(&k, &st, 1, l, &mut rng).unwrap())
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = bench
}
criterion_main!(benches);
