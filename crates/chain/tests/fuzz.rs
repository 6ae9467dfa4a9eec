//! Drives the fuzz targets of `scalechain_consensus::fuzz` on stable: over a seed corpus of real
//! encodings (a generated chain's blocks, transactions, headers, parameters, undo data and
//! coins), over deterministic mutations of it, and over proptest's arbitrary bytes.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use scalechain_chain::{Chain, ChainStore, MemStore};
use scalechain_consensus::fuzz::TARGETS;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_types::codec::Encode;
use scalechain_types::HashKind;
use scalechain_workload::Generator;

fn corpus() -> Vec<Vec<u8>> {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let mut chain =
        Chain::open_or_init(MemStore::new(), &p, Apps::none(), VerifyConfig::parallel([3; 32])).unwrap();
    let mut g = Generator::new(&p, SigMode::Ed25519, 4);
    let mut out = vec![p.encode(), vec![], vec![0; 8]];
    for _ in 0..3 {
        let parent = chain.tip_header();
        let b = g.build_block(&parent, chain.next_target(), parent.time + 1000, 6);
        out.push(b.encode());
        out.push(b.header.encode());
        out.extend(b.txs.iter().map(Encode::encode));
        chain.accept_block(b, u64::MAX / 2).unwrap();
    }
    let tip = chain.tip();
    out.push(chain.store().get_undo(&tip).unwrap().unwrap().encode());
    out.extend(chain.utxos().iter().take(3).map(|(_, c)| c.encode()));
    out
}

/// Deterministic mutations: bit flips, truncations, byte insertions, count corruption.
fn mutations(seed: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let n = seed.len();
    for i in (0..n).step_by((n / 24).max(1)) {
        let mut m = seed.to_vec();
        m[i] ^= 1 << (i % 8);
        out.push(m);
        out.push(seed[..i].to_vec());
        let mut m = seed.to_vec();
        m.insert(i, 0xff);
        out.push(m);
        if i + 4 <= n {
            let mut m = seed.to_vec();
            m[i..i + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            out.push(m);
        }
    }
    out
}

#[test]
fn fuzz_targets_survive_the_seed_corpus_and_its_mutations() {
    let corpus = corpus();
    let mut runs = 0;
    for seed in &corpus {
        for input in std::iter::once(seed.clone()).chain(mutations(seed)) {
            for (_, target) in TARGETS {
                target(&input);
                runs += 1;
            }
        }
    }
    assert!(runs > 1000, "the corpus drives every target many times ({runs})");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn fuzz_targets_survive_arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        for (_, target) in TARGETS {
            target(&data);
        }
    }
}
