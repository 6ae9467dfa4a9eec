//! `vote demo` end to end, both schemes: the tally equals the truth, every proof verifies, and
//! every kind of invalid ballot is refused with its own rule.
#![allow(clippy::unwrap_used)]

use scalechain_voting::demo::{run, DemoOpts, INVALID_KINDS};
use scalechain_voting::BallotScheme;

fn demo(scheme: BallotScheme, voters: usize) {
    let invalid = 2 * INVALID_KINDS.len();
    let r = run(&DemoOpts { scheme, voters, candidates: 4, invalid, seed: 7 }).unwrap();
    assert_eq!(r.scheme, scheme.name());
    assert_eq!(r.tally, r.expected, "{}", r.json());
    assert!(r.verified, "{}", r.json());
    assert_eq!(r.rejected_invalid, invalid, "{}", r.json());
    let rule = |name: &str| r.rejected_by_rule.get(name).copied().unwrap_or(0);
    assert_eq!(rule("vote-double-vote"), 2);
    assert_eq!(rule("vote-bad-token"), 2);
    assert_eq!(rule("vote-outside-window"), 2);
    // bad proof, a value outside the set, a replay under another key
    let choice_proofs = if scheme == BallotScheme::Elgamal { 4 } else { 6 };
    assert_eq!(rule("vote-bad-choice-proof"), choice_proofs, "{}", r.json());
    match scheme {
        BallotScheme::Elgamal => {
            assert_eq!(rule("vote-bad-sum-proof"), 2);
            assert_eq!(rule("vote-malformed"), 2);
        }
        BallotScheme::Paillier => assert_eq!(rule("vote-ciphertext-not-unit"), 2),
    }
}

#[test]
fn an_elgamal_demo_election_is_correct() {
    demo(BallotScheme::Elgamal, 60);
}

#[test]
fn a_paillier_demo_election_is_correct() {
    demo(BallotScheme::Paillier, 30);
}
