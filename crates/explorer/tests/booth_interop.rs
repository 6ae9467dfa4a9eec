//! The booth's ballot code against the chain's, both ways, byte for byte: the bundled module the
//! explorer serves (`assets/booth.js`) runs under Node.js (`tests/booth_driver.mjs`) and
//!
//! - given the same random bytes as the Rust `elgamal::cast_opened`, makes the same ballot, the
//!   same signed transaction and txid, for each hash function and for 1, 3 and 10 candidates;
//! - makes ballots with its own randomness that the Rust checks every node makes accept
//!   (`app::check_ballot`: token, signature, decoding, proofs), and audits that the Rust
//!   `booth::BallotAudit::check` accepts (and refuses for another choice);
//! - accepts the Rust-made ballots and audits, and refuses tampered ones with the rule the Rust
//!   checks name (`vote-bad-choice-proof`, `vote-bad-sum-proof`, `vote-bad-token`);
//! - refuses a token minted for another key before making any ballot.
//!
//! Without `node` the test says so and passes, unless `SCALECHAIN_REQUIRE_BROWSER=1` (CI sets
//! it), which makes it fail.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::{json, Value};

use scalechain_types::{HashKind, Scheme, SecretKey};
use scalechain_voting::app::{check_ballot, CastBallot, Election, Message, SchemeKey};
use scalechain_voting::booth::{tracker, BallotAudit};
use scalechain_voting::elgamal;
use scalechain_voting::tally::EaKeys;
use scalechain_voting::{BallotScheme, Statement};

fn here(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The driver's answers to `requests`, or `None` when Node.js is missing (and not required).
fn run(requests: &[Value]) -> Option<Vec<Value>> {
    let required = std::env::var("SCALECHAIN_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    let child = Command::new("node")
        .arg(here("tests/booth_driver.mjs"))
        .arg(here("assets/booth.js"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(!required, "SCALECHAIN_REQUIRE_BROWSER=1 but node does not start: {e}");
            eprintln!("skipping the booth's interoperability test: node does not start ({e})");
            return None;
        }
    };
    child.stdin.take().unwrap().write_all(Value::from(requests.to_vec()).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the driver failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.len(), requests.len());
    Some(v)
}

struct Voter {
    seed: [u8; 32],
    key: [u8; 32],
}

fn voter(n: u8) -> Voter {
    let seed = [n; 32];
    let mut key = [0u8; 32];
    key.copy_from_slice(SecretKey::from_seed(Scheme::Ed25519, seed).public().as_bytes());
    Voter { seed, key }
}

/// The signed ballot transaction of `v` carrying `ballot` (its `data` decoded back).
fn signed(kind: HashKind, e: &Election, v: &Voter, token: [u8; 64], ballot: Vec<u8>) -> CastBallot {
    let mut b = CastBallot { election: e.clone(), voter_key: v.key, token, ballot, signature: [0; 64] };
    b.signature = SecretKey::from_seed(Scheme::Ed25519, v.seed).sign(&b.signing_message(kind));
    b
}

fn tx_hex(b: &CastBallot) -> String {
    hex::encode(scalechain_types::codec::Encode::encode(&Message::Ballot(b.clone()).into_tx()))
}

/// The cast ballot a signed transaction (hex) carries.
fn carried(tx: &str) -> CastBallot {
    let tx: scalechain_types::Tx =
        scalechain_types::codec::Decode::decode(&hex::decode(tx).unwrap()).unwrap();
    match Message::decode(&tx.data).unwrap() {
        Message::Ballot(b) => b,
        Message::Election(_) => panic!("not a ballot"),
    }
}

#[test]
fn the_booths_ballots_and_the_chains_are_the_same_bytes_both_ways() {
    let mut rng = ChaCha20Rng::seed_from_u64(34);
    for (kind, candidates) in [(HashKind::Sha256, 3), (HashKind::Blake3, 1), (HashKind::Sha512_256, 10)] {
        let keys = EaKeys::generate(BallotScheme::Elgamal, &mut rng).unwrap();
        let e = keys.election(candidates, 1, 100, 50, "interop").unwrap();
        let id = e.id(kind);
        let SchemeKey::Elgamal(k) = e.check().unwrap() else { panic!("an elgamal election") };
        let election = hex::encode(e.encode());
        let (a, b) = (voter(1), voter(2));
        let token = |v: &Voter| keys.register(kind, &id, &v.key);
        let choice = candidates - 1;

        // The same random bytes: the Rust ballot, drawn from a stream the booth replays.
        let stream_seed: u64 = rng.next_u64();
        let draws = 4 * candidates + 1;
        let mut stream = vec![0u8; 64 * draws];
        ChaCha20Rng::seed_from_u64(stream_seed).fill_bytes(&mut stream);
        let a_id = kind.hash(&a.key);
        let st = Statement { election: &id.0, voter: &a_id.0 };
        let (rust_ballot, opening) =
            elgamal::cast_opened(&k, &st, choice, candidates, &mut ChaCha20Rng::seed_from_u64(stream_seed))
                .unwrap();
        let rust_cast = signed(kind, &e, &a, token(&a), rust_ballot.encode());
        let rust_tx = tx_hex(&rust_cast);

        // Rust-made ballots for the page's verifier: as made, and tampered (re-signed, so that
        // the proofs are what fails).
        let b_id = kind.hash(&b.key);
        let st_b = Statement { election: &id.0, voter: &b_id.0 };
        let rust_b = signed(
            kind,
            &e,
            &b,
            token(&b),
            elgamal::cast(&k, &st_b, 0, candidates, &mut rng).unwrap().encode(),
        );
        let mut bad_bit = rust_b.ballot.clone();
        bad_bit[4 + 7 * 32] ^= 1; // candidate 0's s_0
        let mut bad_sum = rust_b.ballot.clone();
        let n = bad_sum.len();
        bad_sum[n - 32] ^= 1; // the sum proof's s
        let bad_bit = signed(kind, &e, &b, token(&b), bad_bit);
        let bad_sum = signed(kind, &e, &b, token(&b), bad_sum);
        let rust_audit = BallotAudit::new(id, kind, a.key, rust_ballot.encode(), opening).to_json();

        let q = |op: &str, extra: Value| {
            let mut v = json!({ "op": op, "hash": kind.name() });
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            v
        };
        let cast_q = |v: &Voter, token: [u8; 64], random: Option<&[u8]>| {
            let (seed, token) = (hex::encode(v.seed), hex::encode(token));
            let mut x = json!({ "election": election, "seed": seed, "token": token, "choice": choice });
            if let Some(r) = random {
                x["random"] = json!(hex::encode(r));
            }
            q("cast", x)
        };
        let requests = vec![
            cast_q(&a, token(&a), Some(&stream)),
            cast_q(&b, token(&b), None),
            cast_q(&a, token(&b), None),
            q("check", json!({ "tx": tx_hex(&rust_b) })),
            q("check", json!({ "tx": tx_hex(&bad_bit) })),
            q("check", json!({ "tx": tx_hex(&bad_sum) })),
            q("audit", json!({ "election": election, "audit": rust_audit })),
        ];
        let Some(got) = run(&requests) else { return };
        let what = format!("{kind}, {candidates} candidates");

        // Same bytes from the same randomness: ballot, signed transaction, txid, tracker.
        assert_eq!(got[0]["ballot"], hex::encode(rust_ballot.encode()), "{what}: the ballot");
        assert_eq!(got[0]["tx"], rust_tx, "{what}: the signed transaction");
        let tx: scalechain_types::Tx =
            scalechain_types::codec::Decode::decode(&hex::decode(&rust_tx).unwrap()).unwrap();
        assert_eq!(got[0]["txid"], tx.txid(kind).to_string(), "{what}: the txid");
        assert_eq!(
            got[0]["tracker"],
            tracker(kind, &rust_ballot.encode()).to_string(),
            "{what}: the tracker"
        );

        // The page's own ballot passes every check a node makes; its audit, the Rust check.
        assert_eq!(got[1]["ok"], true, "{what}: {}", got[1]);
        let page_cast = carried(got[1]["tx"].as_str().unwrap());
        check_ballot(kind, &page_cast).unwrap_or_else(|x| panic!("{what}: {}: {}", x.rule, x.detail));
        for made in [&got[0], &got[1]] {
            let audit = BallotAudit::from_json(made["audit"].as_str().unwrap()).unwrap();
            assert_eq!(audit.check(kind, &e).unwrap(), choice, "{what}");
            if candidates > 1 {
                let mut lie = audit.clone();
                lie.opening.choice = 0;
                assert!(lie.check(kind, &e).is_err(), "{what}: an audit opening to another choice");
            }
        }

        // A token for another key: refused in the page before a ballot is made, as the chain would.
        assert_eq!(got[2]["ok"], false, "{what}");
        assert_eq!(got[2]["rule"], "vote-bad-token", "{what}: {}", got[2]);
        let other = signed(kind, &e, &a, token(&b), rust_b.ballot.clone());
        assert_eq!(check_ballot(kind, &other).unwrap_err().rule, "vote-bad-token");

        // Rust-made ballots and audits in the page's verifier; tampered ones refused by both with
        // the same rule.
        assert_eq!(got[3]["ok"], true, "{what}: {}", got[3]);
        assert_eq!(got[3]["tracker"], tracker(kind, &rust_b.ballot).to_string());
        for (answer, tampered) in [(&got[4], &bad_bit), (&got[5], &bad_sum)] {
            let rust_rule = check_ballot(kind, tampered).unwrap_err().rule;
            assert_eq!(answer["ok"], false, "{what}");
            assert_eq!(answer["rule"], rust_rule, "{what}: {answer}");
        }
        assert_eq!(got[6], json!({ "ok": true, "choice": choice }), "{what}");
    }
}
