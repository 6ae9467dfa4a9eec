//! `scalechain vote demo`: a whole election on an in-process chain. The EA publishes the
//! election and registers the voters; voters cast ballots with random choices (and, on request,
//! invalid ballots of every kind); a mempool-style admission (`verify_txs`, parallel) filters
//! what is submitted; admitted ballots are mined into blocks and connected by consensus; then
//! anyone tallies from chain state, the EA decrypts with proofs, and anyone verifies.

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
use scalechain_sim::workload::block_paying;
use scalechain_types::{Hash, HashKind, Scheme, SecretKey, Tx};

use crate::app::{
    ballots_prefix, token_message, CastBallot, Election, Message, VotingModule, SCHEME_ELGAMAL,
};
use crate::elgamal::{self, Ballot, Dlog, Statement};

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

struct Setup {
    k: elgamal::PublicKey,
    p: Params,
    kind: HashKind,
    ea_token: SecretKey,
    ea_secret: elgamal::SecretKey,
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

impl Setup {
    /// Voter `i`'s ballot for `choice`; `edit` may change it before the voter signs.
    fn ballot(
        &self,
        seed: u64,
        i: u64,
        choice: usize,
        rng: &mut ChaCha20Rng,
        edit: impl FnOnce(&mut Ballot),
    ) -> Result<CastBallot, DemoError> {
        let voter = voter_key(seed, i);
        let vk = key32(&voter);
        let vid = self.kind.hash(&vk);
        let st = Statement { election: &self.id.0, voter: &vid.0 };
        let mut ballot = elgamal::cast(&self.k, &st, choice, usize::from(self.election.candidates), rng)
            .map_err(|e| DemoError(format!("cast: {e}")))?;
        edit(&mut ballot);
        let token = self.ea_token.sign(&token_message(self.kind, &self.id, &vk));
        let mut b = CastBallot {
            election: self.election.clone(),
            voter_key: vk,
            token,
            ballot: ballot.encode(),
            signature: [0; 64],
        };
        b.signature = voter.sign(&b.signing_message(self.kind));
        Ok(b)
    }
}

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
    if l == 0 || l > elgamal::MAX_CANDIDATES {
        return Err(DemoError(format!("{l} candidates (1 to {} allowed)", elgamal::MAX_CANDIDATES)));
    }
    let fail = |what: &str, e: &dyn std::fmt::Display| DemoError(format!("{what}: {e}"));
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
    let (ea_secret, k) = elgamal::keygen(&mut rng);
    let ballot_blocks = o.voters.div_ceil(BLOCK_BALLOTS) as u64;
    let election = Election {
        candidates: l as u8,
        start: 2,
        // Room for every ballot block and one for the invalid ballots.
        end: 2 + ballot_blocks + 1,
        scheme: SCHEME_ELGAMAL,
        token_key: key32(&ea_token),
        election_key: k.0.compress().to_bytes(),
        label: format!("demo election, seed {}", o.seed).into_bytes(),
    };
    let id = election.id(kind);
    let s = Setup { k, p: p.clone(), kind, ea_token, ea_secret, election, id };
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
            Ok(Message::Ballot(s.ballot(o.seed, i as u64, c, &mut r, |_| {})?).into_tx())
        })
        .collect::<Result<_, DemoError>>()?;
    let mut invalid: Vec<(usize, Tx)> = Vec::new();
    for j in 0..o.invalid {
        let k_idx = j % INVALID_KINDS.len();
        let i = (o.voters + j) as u64 + 1_000_000; // voters who cast no honest ballot
        let c = j % l;
        let b = match INVALID_KINDS[k_idx] {
            "double-vote" if o.voters > 0 => {
                s.ballot(o.seed, (j % o.voters) as u64, (choices[j % o.voters] + 1) % l, &mut rng, |_| {})?
            }
            "bad-proof" => {
                s.ballot(o.seed, i, c, &mut rng, |b| b.sum.s += curve25519_dalek::scalar::Scalar::ONE)?
            }
            "value-outside-set" => s.ballot(o.seed, i, c, &mut rng, |b| {
                b.cts[0].beta += curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT
            })?,
            "wrong-token" => {
                let mut b = s.ballot(o.seed, i, c, &mut rng, |_| {})?;
                b.token = SecretKey::from_seed(Scheme::Ed25519, [0x66; 32]).sign(&token_message(
                    kind,
                    &id,
                    &b.voter_key,
                ));
                b.signature = voter_key(o.seed, i).sign(&b.signing_message(kind));
                b
            }
            "replayed-under-another-key" => {
                let donor = s.ballot(o.seed, i + 500_000, c, &mut rng, |_| {})?;
                let mut b = s.ballot(o.seed, i, c, &mut rng, |_| {})?;
                b.ballot = donor.ballot;
                b.signature = voter_key(o.seed, i).sign(&b.signing_message(kind));
                b
            }
            "malformed-ciphertext" => {
                let mut b = s.ballot(o.seed, i, c, &mut rng, |_| {})?;
                if b.ballot.len() >= 36 {
                    b.ballot[4..36].copy_from_slice(&[0xff; 32]);
                }
                b.signature = voter_key(o.seed, i).sign(&b.signing_message(kind));
                b
            }
            // "outside-window" (submitted after the window closes), and a double vote when
            // there are no honest voters to repeat.
            _ => s.ballot(o.seed, i, c, &mut rng, |_| {})?,
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
    let ballots: Vec<Ballot> = chain
        .app_state()
        .range(prefix.clone()..)
        .take_while(|(key, _)| key.starts_with(&prefix))
        .map(|(_, b)| Ballot::decode(b))
        .collect::<Result<_, _>>()
        .map_err(|e| fail("stored ballot", &e))?;
    let sums = elgamal::tally(&ballots, l);
    let dlog = Dlog::new(ballots.len() as u64);
    let st = Statement { election: &id.0, voter: &[0; 32] };
    let mut tally = Vec::with_capacity(l);
    let mut verified = ballots.len() == o.voters;
    for ct in &sums {
        let (count, proof) =
            elgamal::decrypt(&s.ea_secret, &st, ct, &dlog, &mut rng).map_err(|e| fail("decrypt", &e))?;
        verified &= elgamal::verify_decryption(&k, &st, ct, count, &proof).is_ok();
        tally.push(count);
    }
    let tally_s = t_tally.elapsed().as_secs_f64();
    let mut expected = vec![0u64; l];
    for &c in &choices {
        expected[c] += 1;
    }
    latencies.sort_by(f64::total_cmp);
    Ok(DemoReport {
        scheme: "elgamal",
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
