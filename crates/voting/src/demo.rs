//! `scalechain vote demo`: a whole election on an in-process chain, under either ballot scheme
//! ([`BallotScheme`]). The EA publishes the election and registers the voters; voters cast
//! ballots with random choices (and, on request, invalid ballots of every kind); a mempool-style
//! admission (`verify_txs`, parallel, ballot proofs checked in batches) filters what is
//! submitted; admitted ballots are mined into blocks and connected by consensus (batch
//! pre-check again); then anyone tallies from chain state and re-verifies the stored ballots,
//! the EA decrypts with proofs, and anyone verifies.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use rayon::prelude::*;

use scalechain_chain::{Accepted, Chain, MemStore};
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{verify_txs, Apps, Params, TxEnv, VerifyConfig};
use scalechain_types::{Hash, HashKind, Scheme, SecretKey, Tx};
use scalechain_workload::fixed::block_paying;

use crate::app::{
    ballots_prefix, elgamal_election_key, token_message, CastBallot, Election, Message, VotingModule,
};
use crate::elgamal::{self, Dlog};
use crate::paillier;
use crate::{BallotScheme, Statement};

/// Ballots per block.
pub const BLOCK_BALLOTS: usize = 2_000;

/// The kinds of invalid ballot the demo submits, in turn.
pub const INVALID_KINDS: [&str; 7] = [
    "double-vote",
    "bad-proof",
    "value-outside-set",
    "wrong-token",
    "outside-window",
    "replayed-under-another-key",
    "malformed-ciphertext",
];

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct DemoOpts {
    /// The ballot scheme.
    pub scheme: BallotScheme,
    /// Honest voters.
    pub voters: usize,
    /// Candidates.
    pub candidates: usize,
    /// Invalid ballots to submit.
    pub invalid: usize,
    /// Seed of every random choice.
    pub seed: u64,
}

/// Latency percentiles, ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct DemoReport {
    /// Ballot scheme.
    pub scheme: &'static str,
    /// Decrypted counts per candidate.
    pub tally: Vec<u64>,
    /// The generator's true counts.
    pub expected: Vec<u64>,
    /// Every decryption proof verified and the ballots re-verified from chain data.
    pub verified: bool,
    /// Invalid ballots submitted.
    pub invalid_cast: usize,
    /// Invalid ballots refused (by admission; consensus refuses the same, see the tests).
    pub rejected_invalid: usize,
    /// Refusals by rule.
    pub rejected_by_rule: BTreeMap<String, usize>,
    /// Valid ballots confirmed per second, from first submission to last confirmation.
    pub ballots_per_s: f64,
    /// Submission-to-confirmation latency.
    pub latency_ms: Latency,
    /// Blocks mined (election, ballots, closing).
    pub blocks: u64,
    /// Seconds the voters spent encrypting and proving (client side, not in `ballots_per_s`).
    pub cast_s: f64,
    /// Seconds to tally, decrypt and verify.
    pub tally_s: f64,
}

impl DemoReport {
    /// One-line JSON.
    pub fn json(&self) -> String {
        let arr = |v: &[u64]| format!("[{}]", v.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
        let rules: Vec<String> = self.rejected_by_rule.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!(
            "{{\"scheme\":\"{}\",\"tally\":{},\"expected\":{},\"verified\":{},\"invalid_cast\":{},\"rejected_invalid\":{},\"rejected_by_rule\":{{{}}},\"ballots_per_s\":{:.1},\"latency_ms\":{{\"p50\":{:.1},\"p99\":{:.1}}},\"blocks\":{},\"cast_s\":{:.3},\"tally_s\":{:.3}}}",
            self.scheme,
            arr(&self.tally),
            arr(&self.expected),
            self.verified,
            self.invalid_cast,
            self.rejected_invalid,
            rules.join(","),
            self.ballots_per_s,
            self.latency_ms.p50,
            self.latency_ms.p99,
            self.blocks,
            self.cast_s,
            self.tally_s,
        )
    }
}

/// Why the demo could not finish (a bug, never an invalid ballot: those are counted).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DemoError(String);

/// The EA's keys.
enum Keys {
    Elgamal { secret: elgamal::SecretKey, public: elgamal::PublicKey },
    Paillier { secret: paillier::SecretKey, key: paillier::ElectionKey },
}

/// How an invalid ballot is made from an honest one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tamper {
    None,
    /// A proof response changed after proving.
    BadProof,
    /// A vote outside the valid set (elgamal: a candidate's ciphertext encrypts 2; paillier: the
    /// ciphertext encrypts two votes, or none, with a proof claiming one).
    OutsideSet,
    /// A ciphertext that is not a group element (elgamal: a point that does not decompress;
    /// paillier: `c = N ∉ Z*_{N²}`).
    Malformed,
}

struct Setup {
    keys: Keys,
    p: Params,
    kind: HashKind,
    ea_token: SecretKey,
    election: Election,
    id: Hash,
}

fn voter_key(seed: u64, i: u64) -> SecretKey {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&i.to_le_bytes());
    s[16] = 0x70;
    SecretKey::from_seed(Scheme::Ed25519, s)
}

fn key32(k: &SecretKey) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(k.public().as_bytes());
    out
}

fn fail(what: &str, e: &dyn std::fmt::Display) -> DemoError {
    DemoError(format!("{what}: {e}"))
}

impl Setup {
    /// The encrypted ballot of a vote for `choice`, tampered with as asked.
    fn encrypted(
        &self,
        st: &Statement<'_>,
        choice: usize,
        tamper: Tamper,
        rng: &mut ChaCha20Rng,
    ) -> Result<Vec<u8>, DemoError> {
        let l = usize::from(self.election.candidates);
        match &self.keys {
            Keys::Elgamal { public, .. } => {
                let mut b = elgamal::cast(public, st, choice, l, rng).map_err(|e| fail("cast", &e))?;
                match tamper {
                    Tamper::BadProof => b.sum.s += curve25519_dalek::scalar::Scalar::ONE,
                    Tamper::OutsideSet => {
                        b.cts[0].beta += curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT
                    }
                    Tamper::None | Tamper::Malformed => {}
                }
                let mut bytes = b.encode();
                if tamper == Tamper::Malformed && bytes.len() >= 36 {
                    bytes[4..36].copy_from_slice(&[0xff; 32]);
                }
                Ok(bytes)
            }
            Keys::Paillier { key, .. } => {
                let e = |e: crate::VoteError| fail("cast", &e);
                let mut b = if tamper == Tamper::OutsideSet {
                    // Two votes (none with one candidate), proven as a vote for `choice`.
                    let mut m = key.encoding(choice).map_err(e)?;
                    if l > 1 {
                        let other = key.encoding((choice + 1) % l).map_err(e)?;
                        let sum = &m + &other;
                        m = sum;
                    } else {
                        m = openssl::bn::BigNum::new().map_err(|x| e(x.into()))?;
                    }
                    let (c, r) = key.public.encrypt(&m, rng).map_err(e)?;
                    let proof = paillier::prove(key, st, &c, &r, choice, l, rng).map_err(e)?;
                    paillier::Ballot { c, proof }
                } else {
                    paillier::cast(key, st, choice, l, rng).map_err(e)?
                };
                match tamper {
                    Tamper::BadProof => {
                        let mut z = openssl::bn::BigNum::new().map_err(|x| e(x.into()))?;
                        let mut ctx = openssl::bn::BigNumContext::new().map_err(|x| e(x.into()))?;
                        z.mod_add(&b.proof.z[0], &b.proof.z[0], key.public.n(), &mut ctx)
                            .map_err(|x| e(x.into()))?;
                        b.proof.z[0] = z;
                    }
                    Tamper::Malformed => {
                        b.c = paillier::Ciphertext(key.public.n().to_owned().map_err(|x| e(x.into()))?);
                    }
                    Tamper::None | Tamper::OutsideSet => {}
                }
                b.encode(key.public.modulus_bytes()).map_err(e)
            }
        }
    }

    /// Voter `i`'s ballot for `choice`, tampered with as asked before the voter signs it.
    fn ballot(
        &self,
        seed: u64,
        i: u64,
        choice: usize,
        rng: &mut ChaCha20Rng,
        tamper: Tamper,
    ) -> Result<CastBallot, DemoError> {
        let voter = voter_key(seed, i);
        let vk = key32(&voter);
        let vid = self.kind.hash(&vk);
        let st = Statement { election: &self.id.0, voter: &vid.0 };
        let ballot = self.encrypted(&st, choice, tamper, rng)?;
        let token = self.ea_token.sign(&token_message(self.kind, &self.id, &vk));
        let mut b =
            CastBallot { election: self.election.clone(), voter_key: vk, token, ballot, signature: [0; 64] };
        b.signature = voter.sign(&b.signing_message(self.kind));
        Ok(b)
    }

    /// Anyone's tally from the stored ballots `(voter id, ballot)`: every ballot re-verified
    /// (in batches), the EA's decryption with its proofs, and their verification. Returns the
    /// counts and whether everything verified.
    fn tally(&self, stored: &[([u8; 32], Vec<u8>)], seed: u64) -> Result<(Vec<u64>, bool), DemoError> {
        let l = usize::from(self.election.candidates);
        let chunk_rng = |c: usize| {
            ChaCha20Rng::from_seed(
                HashKind::Sha256.hash_parts(&[b"tally", &seed.to_le_bytes(), &c.to_le_bytes()]).0,
            )
        };
        match &self.keys {
            Keys::Elgamal { secret, public } => {
                let ballots: Vec<elgamal::WireBallot> = stored
                    .iter()
                    .map(|(_, b)| elgamal::WireBallot::decode(b))
                    .collect::<Result<_, _>>()
                    .map_err(|e| fail("stored ballot", &e))?;
                let items: Vec<_> = stored
                    .iter()
                    .zip(&ballots)
                    .map(|((v, _), b)| (Statement { election: &self.id.0, voter: v }, b))
                    .collect();
                let mut verified = items.par_chunks(BATCH).enumerate().all(|(c, chunk)| {
                    elgamal::verify_wire_ballots(public, chunk, l, &mut chunk_rng(c))
                        .iter()
                        .all(Result::is_ok)
                });
                let sums = elgamal::tally(ballots.iter().map(elgamal::WireBallot::ballot), l);
                let dlog = Dlog::new(ballots.len() as u64);
                let tally_st = Statement { election: &self.id.0, voter: &[0; 32] };
                let mut rng = chunk_rng(usize::MAX);
                let mut tally = Vec::with_capacity(l);
                for ct in &sums {
                    let (count, proof) = elgamal::decrypt(secret, &tally_st, ct, &dlog, &mut rng)
                        .map_err(|e| fail("decrypt", &e))?;
                    verified &= elgamal::verify_decryption(public, &tally_st, ct, count, &proof).is_ok();
                    tally.push(count);
                }
                Ok((tally, verified))
            }
            Keys::Paillier { secret, key } => {
                let ballots: Vec<paillier::Ballot> = stored
                    .iter()
                    .map(|(_, b)| paillier::Ballot::decode(b, key))
                    .collect::<Result<_, _>>()
                    .map_err(|e| fail("stored ballot", &e))?;
                let items: Vec<_> = stored
                    .iter()
                    .zip(&ballots)
                    .map(|((v, _), b)| (Statement { election: &self.id.0, voter: v }, b))
                    .collect();
                // One by one, as consensus checks them (the batch equation is not trusted).
                let verified = items.par_iter().all(|(st, b)| paillier::verify_ballot(key, st, b, l).is_ok());
                let c = paillier::tally(key, &ballots).map_err(|e| fail("tally", &e))?;
                let n = ballots.len() as u64;
                let (counts, proof) =
                    paillier::decrypt_tally(secret, key, &c, l, n).map_err(|e| fail("decrypt", &e))?;
                let ok = paillier::verify_tally(key, &c, &counts, n, &proof).is_ok();
                Ok((counts, verified && ok))
            }
        }
    }
}

/// Ballots per batch when re-verifying the stored ballots.
const BATCH: usize = 256;

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs the election.
pub fn run(o: &DemoOpts) -> Result<DemoReport, DemoError> {
    let l = o.candidates;
    if l == 0 || l > crate::app::MAX_CANDIDATES {
        return Err(DemoError(format!("{l} candidates (1 to {} allowed)", crate::app::MAX_CANDIDATES)));
    }
    let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    p.max_block_txs = p.max_block_txs.max(BLOCK_BALLOTS as u64 * 2);
    let kind = p.hash;
    let mut apps = Apps::none();
    apps.register(Arc::new(VotingModule));
    let verify = VerifyConfig::parallel(HashKind::Sha256.hash(&o.seed.to_le_bytes()).0);
    let mut chain =
        Chain::open_or_init(MemStore::new(), &p, apps.clone(), verify).map_err(|e| fail("chain", &e))?;
    let mut rng = ChaCha20Rng::seed_from_u64(o.seed);
    let ea_token =
        SecretKey::from_seed(Scheme::Ed25519, HashKind::Sha256.hash_parts(&[b"ea", &o.seed.to_le_bytes()]).0);
    // Every registered voter (the invalid ballots' voters too) counts, and fits in the
    // paillier encoding.
    let voters = (o.voters + o.invalid).max(1) as u64;
    let (keys, election_key) = match o.scheme {
        BallotScheme::Elgamal => {
            let (secret, public) = elgamal::keygen(&mut rng);
            let bytes = elgamal_election_key(voters, &public);
            (Keys::Elgamal { secret, public }, bytes)
        }
        BallotScheme::Paillier => {
            let secret = paillier::keygen(paillier::ELECTION_MODULUS_BITS, &mut rng)
                .map_err(|e| fail("keygen", &e))?;
            let key = paillier::ElectionKey { public: secret.public().clone(), voters };
            let bytes = key.encode();
            (Keys::Paillier { secret, key }, bytes)
        }
    };
    let ballot_blocks = o.voters.div_ceil(BLOCK_BALLOTS) as u64;
    let election = Election {
        candidates: l as u8,
        start: 2,
        // Room for every ballot block and one for the invalid ballots.
        end: 2 + ballot_blocks + 1,
        scheme: o.scheme.byte(),
        token_key: key32(&ea_token),
        election_key,
        label: format!("demo election, seed {}", o.seed).into_bytes(),
    };
    election.check().map_err(|e| fail("election", &e))?;
    let id = election.id(kind);
    let s = Setup { keys, p: p.clone(), kind, ea_token, election, id };
    let now = u64::MAX / 2;
    let mine = |chain: &mut Chain<MemStore>, txs: &[Tx]| -> Result<(), DemoError> {
        let prev = chain.tip_header();
        let b = block_paying(&s.p, &prev, txs, chain.next_target(), 0);
        match chain.accept_block(b, now).map_err(|e| fail("block", &e))? {
            Accepted::Connected(_) => Ok(()),
            other => Err(DemoError(format!("block not connected: {other:?}"))),
        }
    };
    mine(&mut chain, &[Message::Election(s.election.clone()).into_tx()])?;

    // Voters encrypt and prove on their own devices: in parallel, timed apart.
    let t_cast = Instant::now();
    let choices: Vec<usize> = (0..o.voters).map(|_| (rng.next_u64() % l as u64) as usize).collect();
    let honest: Vec<Tx> = choices
        .par_iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut r = ChaCha20Rng::seed_from_u64(o.seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            Ok(Message::Ballot(s.ballot(o.seed, i as u64, c, &mut r, Tamper::None)?).into_tx())
        })
        .collect::<Result<_, DemoError>>()?;
    let mut invalid: Vec<(usize, Tx)> = Vec::new();
    for j in 0..o.invalid {
        let k_idx = j % INVALID_KINDS.len();
        let i = (o.voters + j) as u64 + 1_000_000; // voters who cast no honest ballot
        let c = j % l;
        let b = match INVALID_KINDS[k_idx] {
            "double-vote" if o.voters > 0 => s.ballot(
                o.seed,
                (j % o.voters) as u64,
                (choices[j % o.voters] + 1) % l,
                &mut rng,
                Tamper::None,
            )?,
            "bad-proof" => s.ballot(o.seed, i, c, &mut rng, Tamper::BadProof)?,
            "value-outside-set" => s.ballot(o.seed, i, c, &mut rng, Tamper::OutsideSet)?,
            "wrong-token" => {
                let mut b = s.ballot(o.seed, i, c, &mut rng, Tamper::None)?;
                b.token = SecretKey::from_seed(Scheme::Ed25519, [0x66; 32]).sign(&token_message(
                    kind,
                    &id,
                    &b.voter_key,
                ));
                b.signature = voter_key(o.seed, i).sign(&b.signing_message(kind));
                b
            }
            "replayed-under-another-key" => {
                let donor = s.ballot(o.seed, i + 500_000, c, &mut rng, Tamper::None)?;
                let mut b = s.ballot(o.seed, i, c, &mut rng, Tamper::None)?;
                b.ballot = donor.ballot;
                b.signature = voter_key(o.seed, i).sign(&b.signing_message(kind));
                b
            }
            "malformed-ciphertext" => s.ballot(o.seed, i, c, &mut rng, Tamper::Malformed)?,
            // "outside-window" (submitted after the window closes), and a double vote when
            // there are no honest voters to repeat.
            _ => s.ballot(o.seed, i, c, &mut rng, Tamper::None)?,
        };
        invalid.push((k_idx, Message::Ballot(b).into_tx()));
    }
    let cast_s = t_cast.elapsed().as_secs_f64();

    // Submission rounds: each honest batch, then the invalid ballots (the outside-window ones
    // after the window has closed).
    let mut latencies = Vec::with_capacity(o.voters);
    let mut rejected_by_rule: BTreeMap<String, usize> = BTreeMap::new();
    let mut confirmed = 0usize;
    let t0 = Instant::now();
    let (late, on_time): (Vec<_>, Vec<_>) =
        invalid.into_iter().partition(|(k, _)| INVALID_KINDS[*k] == "outside-window");
    let mut rounds: Vec<(Vec<Tx>, bool)> = honest.chunks(BLOCK_BALLOTS).map(|c| (c.to_vec(), true)).collect();
    for invalid in [on_time, late] {
        rounds.push((invalid.into_iter().map(|(_, t)| t).collect(), false));
    }
    for (txs, is_honest) in rounds {
        let submitted = Instant::now();
        let height = chain.tip_height() + 1;
        let verdicts = {
            let chain_id = chain.chain_id();
            let ctx = ConnectCtx::new(&p, &chain_id, &apps, &verify);
            let env = TxEnv { ctx, view: chain.utxos(), app_state: chain.app_state(), height, time: 0 };
            verify_txs(&env, &txs)
        };
        let mut admitted = Vec::with_capacity(txs.len());
        for (tx, v) in txs.into_iter().zip(verdicts) {
            match v {
                Ok(_) => admitted.push(tx),
                Err(e) => *rejected_by_rule.entry(e.rule().to_string()).or_default() += 1,
            }
        }
        if !is_honest && !admitted.is_empty() {
            return Err(DemoError(format!("{} invalid ballots passed admission", admitted.len())));
        }
        if !admitted.is_empty() {
            mine(&mut chain, &admitted)?;
            let ms = submitted.elapsed().as_secs_f64() * 1e3;
            confirmed += admitted.len();
            latencies.extend(std::iter::repeat_n(ms, admitted.len()));
        }
        // Close the window before the late ballots.
        while !is_honest && chain.tip_height() < s.election.end {
            mine(&mut chain, &[])?;
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    if confirmed != o.voters {
        return Err(DemoError(format!("{confirmed} of {} honest ballots confirmed", o.voters)));
    }

    // Anyone tallies from chain state; the EA decrypts with proofs; anyone verifies.
    let t_tally = Instant::now();
    let prefix = ballots_prefix(&id);
    let stored: Vec<([u8; 32], Vec<u8>)> = chain
        .app_state()
        .range(prefix.clone()..)
        .take_while(|(key, _)| key.starts_with(&prefix))
        .map(|(key, b)| {
            let mut voter = [0u8; 32];
            if let Some(v) = key.get(prefix.len()..prefix.len() + 32) {
                voter.copy_from_slice(v);
            }
            (voter, b.clone())
        })
        .collect();
    let (tally, verified) = s.tally(&stored, o.seed)?;
    let verified = verified && stored.len() == o.voters;
    let tally_s = t_tally.elapsed().as_secs_f64();
    let mut expected = vec![0u64; l];
    for &c in &choices {
        expected[c] += 1;
    }
    latencies.sort_by(f64::total_cmp);
    Ok(DemoReport {
        scheme: o.scheme.name(),
        tally,
        expected,
        verified,
        invalid_cast: o.invalid,
        rejected_invalid: rejected_by_rule.values().sum(),
        rejected_by_rule,
        ballots_per_s: confirmed as f64 / elapsed.max(1e-9),
        latency_ms: Latency { p50: percentile(&latencies, 0.5), p99: percentile(&latencies, 0.99) },
        blocks: chain.tip_height(),
        cast_s,
        tally_s,
    })
}
