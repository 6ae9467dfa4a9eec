//! Interoperability with python-paillier (`phe`), both ways, through `tests/phe/interop.py`:
//! - phe adds our ballots into our tally, decrypts our tally with our key, and accepts our
//!   decryption proof;
//! - phe encrypts votes with randomness our proof code drew, and our verifier accepts ballots
//!   made of phe's ciphertexts with our proofs; our tally of them decrypts to the truth.
//!
//! Skipped (with a message) only when `python3 -c 'import phe'` fails; CI installs phe
//! (`python3 -m pip install phe`) and sets `SCALECHAIN_REQUIRE_PHE=1`, which turns the skip into a
//! failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::{json, Value};

use scalechain_voting::paillier::{
    cast, ciphertexts_from_json, ciphertexts_to_json, decrypt_tally, keygen, prove, tally, verify_ballot,
    verify_ballots, verify_tally, Ballot, ElectionKey, Randomness,
};
use scalechain_voting::Statement;

fn phe_available() -> bool {
    Command::new("python3").args(["-c", "import phe"]).output().is_ok_and(|o| o.status.success())
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/phe/interop.py")
}

/// Runs `interop.py <cmd>` on `input`, returning its output.
fn run(dir: &Path, cmd: &str, input: &Value) -> Value {
    let (inp, out) = (dir.join(format!("{cmd}.in.json")), dir.join(format!("{cmd}.out.json")));
    std::fs::write(&inp, input.to_string()).unwrap();
    let o = Command::new("python3").arg(script()).arg(cmd).arg(&inp).arg(&out).output().unwrap();
    assert!(o.status.success(), "interop.py {cmd} failed: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

fn dec(x: &openssl::bn::BigNumRef) -> String {
    x.to_dec_str().unwrap().to_string()
}

#[test]
fn phe_checks_our_tally_and_we_accept_ballots_phe_encrypted() {
    if !phe_available() {
        // CI installs phe and sets this, so there the test cannot be skipped.
        assert!(
            std::env::var_os("SCALECHAIN_REQUIRE_PHE").is_none(),
            "SCALECHAIN_REQUIRE_PHE is set but python3 cannot import phe"
        );
        eprintln!("SKIPPED phe_interop: python3 cannot import phe (install it: python3 -m pip install phe)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(42);
    let sk = keygen(2048, &mut rng).unwrap();
    let pk = sk.public().clone();
    let l = 4;
    let key = ElectionKey { public: pk.clone(), voters: 20 };
    let voters: Vec<[u8; 32]> = (0..20u8).map(|i| [i; 32]).collect();
    let sts: Vec<Statement<'_>> = voters.iter().map(|v| Statement { election: &[5; 32], voter: v }).collect();

    // Ours → phe: phe sums our ballots, decrypts our tally, checks our decryption proof.
    let mut truth = vec![0u64; l];
    let ballots: Vec<Ballot> = sts[..12]
        .iter()
        .map(|st| {
            let choice = (rng.next_u64() % l as u64) as usize;
            truth[choice] += 1;
            cast(&key, st, choice, l, &mut rng).unwrap()
        })
        .collect();
    let c = tally(&key, &ballots).unwrap();
    let (counts, proof) = decrypt_tally(&sk, &key, &c, l, 12).unwrap();
    assert_eq!(counts, truth);
    let m = key.tally_plaintext(&counts).unwrap();
    let cts: Vec<_> = ballots.iter().map(|b| b.c.clone()).collect();
    let input = json!({
        "private_key": serde_json::from_str::<Value>(&sk.to_phe_json().unwrap()).unwrap(),
        "ballots": serde_json::from_str::<Value>(&ciphertexts_to_json(&pk, &cts).unwrap()).unwrap(),
        "tally": [dec(c.value()), 0],
        "plaintext": dec(&m),
        "r": dec(&proof.r),
    });
    let out = run(dir.path(), "check-tally", &input);
    assert_eq!(out["sum_equals_tally"], json!(true), "phe's sum of our ballots is our tally");
    assert_eq!(out["plaintext"], json!(dec(&m)), "phe decrypts our tally to our plaintext");
    assert_eq!(out["proof_ok"], json!(true), "phe accepts our decryption proof");

    // phe → ours: phe encrypts with randomness our proof code drew; we prove and verify.
    let mut choices = Vec::new();
    let mut rs = Vec::new();
    let mut items = Vec::new();
    for _ in 12..20 {
        let choice = (rng.next_u64() % l as u64) as usize;
        let r = Randomness::random(&pk, &mut rng).unwrap();
        items.push(json!({ "m": dec(&key.encoding(choice).unwrap()), "r": dec(r.value()) }));
        choices.push(choice);
        rs.push(r);
    }
    let out = run(dir.path(), "encrypt", &json!({ "public_key": { "n": dec(pk.n()) }, "items": items }));
    let (phe_pk, phe_cts) = ciphertexts_from_json(&out.to_string()).unwrap();
    assert_eq!(phe_pk, pk);
    assert_eq!(phe_cts.len(), 8);
    let mut phe_ballots = Vec::new();
    for (j, ((c, r), &choice)) in phe_cts.into_iter().zip(&rs).zip(&choices).enumerate() {
        let st = &sts[12 + j];
        assert_eq!(c, pk.encrypt_with(&key.encoding(choice).unwrap(), r).unwrap(), "the same ciphertext");
        let proof = prove(&key, st, &c, r, choice, l, &mut rng).unwrap();
        let b = Ballot { c, proof };
        assert_eq!(verify_ballot(&key, st, &b, l), Ok(()));
        phe_ballots.push(b);
    }
    let refs: Vec<(Statement<'_>, &Ballot)> = sts[12..].iter().copied().zip(phe_ballots.iter()).collect();
    assert!(verify_ballots(&key, &refs, l, &mut rng).iter().all(Result::is_ok));
    let c = tally(&key, &phe_ballots).unwrap();
    let (counts, proof) = decrypt_tally(&sk, &key, &c, l, 8).unwrap();
    let mut truth = vec![0u64; l];
    for &ch in &choices {
        truth[ch] += 1;
    }
    assert_eq!(counts, truth);
    assert_eq!(verify_tally(&key, &c, &counts, 8, &proof), Ok(()));
}
