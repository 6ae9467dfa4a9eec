//! The election authority's side of an election run over a node, and anyone's check of it:
//!
//! - [`EaKeys`]: the EA's secrets (the Ed25519 token key and the scheme's decryption key), their
//!   key file ([`EaKeys::to_json`]), the election descriptor they make, and registration tokens;
//! - [`tally`]: the stored ballots of an election (as the chain's state holds them: voter id and
//!   encrypted ballot) re-verified, added homomorphically and decrypted with proofs into a
//!   [`TallyResult`] (the result file, [`TallyResult::to_json`]);
//! - [`verify`]: anyone's check of a result against the stored ballots: the same ballots, the same
//!   homomorphic sum, and decryption proofs that verify.
//!
//! Pure: randomness comes in as an argument; no IO.

use openssl::bn::BigNum;
use rand_core::{CryptoRng, Rng};
use serde_json::{json, Value};

use scalechain_types::{Hash, HashKind, Scheme, SecretKey, Signature};

use crate::app::{elgamal_election_key, token_message, Election, SchemeKey, MAX_CANDIDATES, MAX_LABEL};
use crate::elgamal::{self, Dlog, WireBallot};
use crate::paillier;
use crate::{BallotScheme, Statement, VoteError};

/// Why a key file, a tally or a result was refused.
#[derive(Debug, thiserror::Error)]
pub enum TallyError {
    /// The EA's key file is unusable.
    #[error("key file: {0}")]
    KeyFile(String),
    /// The election descriptor breaks a rule (its `vote-*` rule and detail).
    #[error("election: {rule}: {detail}")]
    Election {
        /// The consensus rule.
        rule: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The EA's keys are not the election's.
    #[error("the key file's keys are not those of election {0}")]
    NotTheElection(Hash),
    /// A stored ballot does not decode or its proofs fail.
    #[error("stored ballot of voter {voter}: {reason}")]
    Ballot {
        /// The voter's id (`H(voter key)`).
        voter: Hash,
        /// What was wrong.
        reason: String,
    },
    /// The result file is malformed.
    #[error("result file: {0}")]
    ResultFile(String),
    /// The result does not match the chain's ballots.
    #[error("the result does not match the chain: {0}")]
    Mismatch(String),
    /// A decryption proof does not verify, or decryption failed.
    #[error("{0}")]
    Vote(#[from] VoteError),
}

/// The EA's decryption key.
pub enum EaSecret {
    /// An `elgamal` election's `x`.
    Elgamal(elgamal::SecretKey),
    /// A `paillier` election's `p`, `q`.
    Paillier(paillier::SecretKey),
}

/// The EA's secrets.
pub struct EaKeys {
    /// Seed of the Ed25519 key that signs registration tokens.
    pub token_seed: [u8; 32],
    /// The decryption key.
    pub secret: EaSecret,
}

impl std::fmt::Debug for EaKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EaKeys(..)")
    }
}

pub(crate) fn hex32(v: &Value, field: &str) -> Result<[u8; 32], String> {
    let s =
        v.get(field).and_then(Value::as_str).ok_or_else(|| format!("{field}: missing or not a string"))?;
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).map_err(|_| format!("{field}: not 64 hex digits"))?;
    Ok(out)
}

pub(crate) fn hex64(v: &Value, field: &str) -> Result<[u8; 64], String> {
    let s =
        v.get(field).and_then(Value::as_str).ok_or_else(|| format!("{field}: missing or not a string"))?;
    let mut out = [0u8; 64];
    hex::decode_to_slice(s, &mut out).map_err(|_| format!("{field}: not 128 hex digits"))?;
    Ok(out)
}

/// A big number from hex (big-endian), at most `max_bytes`.
fn big(v: &Value, field: &str, max_bytes: usize) -> Result<BigNum, String> {
    let s =
        v.get(field).and_then(Value::as_str).ok_or_else(|| format!("{field}: missing or not a string"))?;
    if s.len() > 2 * max_bytes {
        return Err(format!("{field}: longer than {max_bytes} bytes"));
    }
    let b = hex::decode(s).map_err(|_| format!("{field}: not hex"))?;
    BigNum::from_slice(&b).map_err(|e| format!("{field}: {e}"))
}

fn big_hex(n: &openssl::bn::BigNumRef) -> String {
    hex::encode(n.to_vec())
}

impl EaKeys {
    /// Fresh keys for an election under `scheme` (a 2048-bit modulus for `paillier`).
    pub fn generate<R: Rng + CryptoRng>(scheme: BallotScheme, rng: &mut R) -> Result<EaKeys, TallyError> {
        let mut token_seed = [0u8; 32];
        rng.fill_bytes(&mut token_seed);
        let secret = match scheme {
            BallotScheme::Elgamal => EaSecret::Elgamal(elgamal::keygen(rng).0),
            BallotScheme::Paillier => {
                EaSecret::Paillier(paillier::keygen(paillier::ELECTION_MODULUS_BITS, rng)?)
            }
        };
        Ok(EaKeys { token_seed, secret })
    }

    /// The scheme of the keys.
    pub fn scheme(&self) -> BallotScheme {
        match self.secret {
            EaSecret::Elgamal(_) => BallotScheme::Elgamal,
            EaSecret::Paillier(_) => BallotScheme::Paillier,
        }
    }

    /// The key that signs registration tokens.
    pub fn token_key(&self) -> SecretKey {
        SecretKey::from_seed(Scheme::Ed25519, self.token_seed)
    }

    fn token_public(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.token_key().public().as_bytes());
        out
    }

    /// The election these keys run: `candidates`, window `[start, end]`, at most `voters`
    /// ballots (both schemes: the chain refuses the ballot past it; it also fixes the `paillier`
    /// encoding), a label. Checked as consensus checks it.
    pub fn election(
        &self,
        candidates: usize,
        start: u64,
        end: u64,
        voters: u64,
        label: &str,
    ) -> Result<Election, TallyError> {
        let bad = |detail: String| TallyError::Election { rule: "vote-bad-election", detail };
        let c = u8::try_from(candidates)
            .ok()
            .filter(|&c| c > 0 && usize::from(c) <= MAX_CANDIDATES)
            .ok_or_else(|| bad(format!("{candidates} candidates (1 to {MAX_CANDIDATES})")))?;
        if label.len() > MAX_LABEL {
            return Err(bad(format!("label of {} bytes (at most {MAX_LABEL})", label.len())));
        }
        if voters == 0 {
            return Err(bad("an election counts at least one voter, not 0".into()));
        }
        let election_key = match &self.secret {
            EaSecret::Elgamal(x) => elgamal_election_key(voters, &x.public()),
            EaSecret::Paillier(sk) => paillier::ElectionKey { public: sk.public().clone(), voters }.encode(),
        };
        let e = Election {
            candidates: c,
            start,
            end,
            scheme: self.scheme().byte(),
            token_key: self.token_public(),
            election_key,
            label: label.as_bytes().to_vec(),
        };
        e.check().map_err(|e| TallyError::Election { rule: e.rule, detail: e.detail })?;
        Ok(e)
    }

    /// Do these keys run `e`?
    pub fn runs(&self, e: &Election) -> bool {
        if e.token_key != self.token_public() {
            return false;
        }
        match (&self.secret, e.check()) {
            (EaSecret::Elgamal(x), Ok(SchemeKey::Elgamal(k))) => x.public() == k,
            (EaSecret::Paillier(sk), Ok(SchemeKey::Paillier(k))) => *sk.public() == k.public,
            _ => false,
        }
    }

    /// The registration token of `voter_key` for election `id`.
    pub fn register(&self, kind: HashKind, id: &Hash, voter_key: &[u8; 32]) -> Signature {
        self.token_key().sign(&token_message(kind, id, voter_key))
    }

    /// The key file: JSON with the scheme, the token seed and the decryption key.
    pub fn to_json(&self) -> Result<String, TallyError> {
        let v = match &self.secret {
            EaSecret::Elgamal(x) => json!({
                "scheme": "elgamal",
                "token_seed": hex::encode(self.token_seed),
                "elgamal_secret": hex::encode(x.to_bytes()),
            }),
            EaSecret::Paillier(sk) => {
                let (p, q) = sk.primes();
                json!({
                    "scheme": "paillier",
                    "token_seed": hex::encode(self.token_seed),
                    "paillier_p": big_hex(p),
                    "paillier_q": big_hex(q),
                })
            }
        };
        serde_json::to_string_pretty(&v).map_err(|e| TallyError::KeyFile(e.to_string()))
    }

    /// Parses [`EaKeys::to_json`]'s form.
    pub fn from_json(text: &str) -> Result<EaKeys, TallyError> {
        let v: Value = serde_json::from_str(text).map_err(|e| TallyError::KeyFile(e.to_string()))?;
        let token_seed = hex32(&v, "token_seed").map_err(TallyError::KeyFile)?;
        let scheme = v.get("scheme").and_then(Value::as_str).unwrap_or_default();
        let secret =
            match scheme {
                "elgamal" => {
                    let b = hex32(&v, "elgamal_secret").map_err(TallyError::KeyFile)?;
                    EaSecret::Elgamal(elgamal::SecretKey::from_bytes(b).ok_or_else(|| {
                        TallyError::KeyFile("elgamal_secret: not a canonical scalar".into())
                    })?)
                }
                "paillier" => {
                    let max = paillier::MAX_MODULUS_BITS / 8;
                    let p = big(&v, "paillier_p", max).map_err(TallyError::KeyFile)?;
                    let q = big(&v, "paillier_q", max).map_err(TallyError::KeyFile)?;
                    EaSecret::Paillier(
                        paillier::SecretKey::from_primes(p, q)
                            .map_err(|e| TallyError::KeyFile(format!("paillier primes: {e}")))?,
                    )
                }
                // Not repeated: nothing of a key file is.
                _ => return Err(TallyError::KeyFile("scheme: missing, or not elgamal or paillier".into())),
            };
        Ok(EaKeys { token_seed, secret })
    }
}

/// A ballot as the chain's state stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBallot {
    /// `H(voter key)`.
    pub voter: Hash,
    /// The encrypted ballot with its proofs.
    pub ballot: Vec<u8>,
}

/// The proofs of a result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResultProof {
    /// `elgamal`: per candidate, the summed ciphertext and the decryption proof.
    Elgamal(Vec<(elgamal::Ciphertext, elgamal::EqProof)>),
    /// `paillier`: the product of the ciphertexts and its randomness.
    Paillier {
        /// The tally ciphertext.
        c: paillier::Ciphertext,
        /// Its proof.
        proof: paillier::TallyProof,
    },
}

/// A decrypted tally with its proofs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TallyResult {
    /// The election id.
    pub election: Hash,
    /// Ballots tallied.
    pub ballots: u64,
    /// Votes per candidate.
    pub counts: Vec<u64>,
    /// The proofs.
    pub proof: ResultProof,
}

/// The homomorphic sum of the stored ballots, each re-verified (their proofs are bound to the
/// election and the voter).
enum Sum {
    Elgamal(elgamal::PublicKey, Vec<elgamal::Ciphertext>),
    Paillier(paillier::ElectionKey, paillier::Ciphertext),
}

/// The statement decryption proofs are bound to: the election, no voter.
fn tally_statement(id: &Hash) -> Statement<'_> {
    Statement { election: &id.0, voter: &[0; 32] }
}

/// Re-verifies `ballots` (decoded from `stored`, in the same order) with `verify`, each bound to
/// the election and its voter; the first that fails is the error, naming its voter.
fn verify_stored<B>(
    id: &Hash,
    stored: &[StoredBallot],
    ballots: &[B],
    verify: impl FnOnce(&[(Statement<'_>, &B)]) -> Vec<Result<(), VoteError>>,
) -> Result<(), TallyError> {
    let items: Vec<(Statement<'_>, &B)> = stored
        .iter()
        .zip(ballots)
        .map(|(s, b)| (Statement { election: &id.0, voter: &s.voter.0 }, b))
        .collect();
    match stored.iter().zip(verify(&items)).find(|(_, v)| v.is_err()) {
        Some((s, Err(x))) => Err(TallyError::Ballot { voter: s.voter, reason: x.to_string() }),
        _ => Ok(()),
    }
}

fn sum<R: Rng + CryptoRng>(
    e: &Election,
    kind: HashKind,
    stored: &[StoredBallot],
    rng: &mut R,
) -> Result<Sum, TallyError> {
    let key = e.check().map_err(|e| TallyError::Election { rule: e.rule, detail: e.detail })?;
    let id = e.id(kind);
    let l = usize::from(e.candidates);
    let bad = |voter: Hash, reason: String| TallyError::Ballot { voter, reason };
    match key {
        SchemeKey::Elgamal(k) => {
            let ballots: Vec<WireBallot> = stored
                .iter()
                .map(|s| WireBallot::decode(&s.ballot).map_err(|x| bad(s.voter, x.to_string())))
                .collect::<Result<_, _>>()?;
            verify_stored(&id, stored, &ballots, |items| elgamal::verify_wire_ballots(&k, items, l, rng))?;
            Ok(Sum::Elgamal(k, elgamal::tally(ballots.iter().map(WireBallot::ballot), l)))
        }
        SchemeKey::Paillier(k) => {
            let ballots: Vec<paillier::Ballot> = stored
                .iter()
                .map(|s| paillier::Ballot::decode(&s.ballot, &k).map_err(|x| bad(s.voter, x.to_string())))
                .collect::<Result<_, _>>()?;
            // One by one, as consensus checks them (the batch equation is not trusted here).
            verify_stored(&id, stored, &ballots, |items| {
                items.iter().map(|(st, b)| paillier::verify_ballot(&k, st, b, l)).collect()
            })?;
            let c = paillier::tally(&k, &ballots)?;
            Ok(Sum::Paillier(k, c))
        }
    }
}

/// The EA's tally: `stored` (the election's ballots from chain state) re-verified, added
/// homomorphically, decrypted with `keys`, with proofs.
pub fn tally<R: Rng + CryptoRng>(
    e: &Election,
    kind: HashKind,
    stored: &[StoredBallot],
    keys: &EaKeys,
    rng: &mut R,
) -> Result<TallyResult, TallyError> {
    let id = e.id(kind);
    if !keys.runs(e) {
        return Err(TallyError::NotTheElection(id));
    }
    let n = stored.len() as u64;
    let (counts, proof) = match (sum(e, kind, stored, rng)?, &keys.secret) {
        (Sum::Elgamal(_, sums), EaSecret::Elgamal(x)) => {
            let dlog = Dlog::new(n);
            let mut counts = Vec::with_capacity(sums.len());
            let mut proofs = Vec::with_capacity(sums.len());
            for ct in sums {
                let (count, p) = elgamal::decrypt(x, &tally_statement(&id), &ct, &dlog, rng)?;
                counts.push(count);
                proofs.push((ct, p));
            }
            (counts, ResultProof::Elgamal(proofs))
        }
        (Sum::Paillier(k, c), EaSecret::Paillier(sk)) => {
            let (counts, proof) = paillier::decrypt_tally(sk, &k, &c, usize::from(e.candidates), n)?;
            (counts, ResultProof::Paillier { c, proof })
        }
        _ => return Err(TallyError::NotTheElection(id)),
    };
    Ok(TallyResult { election: id, ballots: n, counts, proof })
}

/// Anyone's check of `result` against the election's stored ballots: same election, same
/// number of ballots, every ballot's proofs, the homomorphic sum recomputed, and the decryption
/// proofs.
pub fn verify<R: Rng + CryptoRng>(
    e: &Election,
    kind: HashKind,
    stored: &[StoredBallot],
    result: &TallyResult,
    rng: &mut R,
) -> Result<(), TallyError> {
    let id = e.id(kind);
    if result.election != id {
        return Err(TallyError::Mismatch(format!(
            "the result is for election {}, not {id}",
            result.election
        )));
    }
    let n = stored.len() as u64;
    if result.ballots != n {
        return Err(TallyError::Mismatch(format!("{} ballots in the result, {n} on chain", result.ballots)));
    }
    if result.counts.len() != usize::from(e.candidates) {
        return Err(TallyError::Mismatch(format!(
            "{} counts for {} candidates",
            result.counts.len(),
            e.candidates
        )));
    }
    match (sum(e, kind, stored, rng)?, &result.proof) {
        (Sum::Elgamal(k, sums), ResultProof::Elgamal(proofs)) => {
            if proofs.len() != sums.len() {
                return Err(TallyError::Mismatch(format!(
                    "{} proofs for {} candidates",
                    proofs.len(),
                    sums.len()
                )));
            }
            for (j, ((ct, p), (sum, count))) in proofs.iter().zip(sums.iter().zip(&result.counts)).enumerate()
            {
                if ct != sum {
                    return Err(TallyError::Mismatch(format!(
                        "candidate {j}: the summed ciphertext differs from the ballots' sum"
                    )));
                }
                elgamal::verify_decryption(&k, &tally_statement(&id), ct, *count, p)
                    .map_err(|x| TallyError::Mismatch(format!("candidate {j}: {x}")))?;
            }
            Ok(())
        }
        (Sum::Paillier(k, sum), ResultProof::Paillier { c, proof }) => {
            if c.0 != sum.0 {
                return Err(TallyError::Mismatch(
                    "the tally ciphertext differs from the ballots' product".into(),
                ));
            }
            paillier::verify_tally(&k, c, &result.counts, n, proof)
                .map_err(|x| TallyError::Mismatch(x.to_string()))
        }
        _ => Err(TallyError::Mismatch("the proof is not of the election's scheme".into())),
    }
}

impl TallyResult {
    /// The result file (JSON).
    pub fn to_json(&self) -> Result<String, TallyError> {
        let proof = match &self.proof {
            ResultProof::Elgamal(ps) => json!({
                "scheme": "elgamal",
                "candidates": ps.iter().map(|(ct, p)| json!({
                    "ciphertext": hex::encode(ct.to_bytes()),
                    "proof": hex::encode(p.to_bytes()),
                })).collect::<Vec<_>>(),
            }),
            ResultProof::Paillier { c, proof } => json!({
                "scheme": "paillier",
                "ciphertext": big_hex(&c.0),
                "randomness": big_hex(&proof.r),
            }),
        };
        let v = json!({
            "election": self.election.to_string(),
            "ballots": self.ballots,
            "counts": self.counts,
            "proof": proof,
        });
        serde_json::to_string_pretty(&v).map_err(|e| TallyError::ResultFile(e.to_string()))
    }

    /// Parses [`TallyResult::to_json`]'s form (lengths bounded before anything is allocated).
    pub fn from_json(text: &str) -> Result<TallyResult, TallyError> {
        let bad = TallyError::ResultFile;
        let v: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let election = Hash(hex32(&v, "election").map_err(bad)?);
        let ballots =
            v.get("ballots").and_then(Value::as_u64).ok_or_else(|| bad("ballots: not a count".into()))?;
        let counts =
            v.get("counts").and_then(Value::as_array).ok_or_else(|| bad("counts: not a list".into()))?;
        if counts.is_empty() || counts.len() > MAX_CANDIDATES {
            return Err(bad(format!("counts: {} entries (1 to {MAX_CANDIDATES})", counts.len())));
        }
        let counts = counts
            .iter()
            .enumerate()
            .map(|(i, c)| c.as_u64().ok_or_else(|| bad(format!("counts[{i}]: not a count"))))
            .collect::<Result<Vec<u64>, _>>()?;
        let p = v.get("proof").ok_or_else(|| bad("proof: missing".into()))?;
        let proof = match p.get("scheme").and_then(Value::as_str) {
            Some("elgamal") => {
                let list = p
                    .get("candidates")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("proof.candidates: not a list".into()))?;
                if list.len() > MAX_CANDIDATES {
                    return Err(bad(format!(
                        "proof.candidates: {} entries (at most {MAX_CANDIDATES})",
                        list.len()
                    )));
                }
                let mut out = Vec::with_capacity(list.len());
                for (j, c) in list.iter().enumerate() {
                    let at = |x: String| bad(format!("proof.candidates[{j}].{x}"));
                    let ct = elgamal::Ciphertext::from_bytes(&hex64(c, "ciphertext").map_err(at)?)
                        .ok_or_else(|| at("ciphertext: not two ristretto255 points".into()))?;
                    let pr = elgamal::EqProof::from_bytes(&hex64(c, "proof").map_err(at)?)
                        .ok_or_else(|| at("proof: not two canonical scalars".into()))?;
                    out.push((ct, pr));
                }
                ResultProof::Elgamal(out)
            }
            Some("paillier") => {
                let max = 2 * paillier::MAX_MODULUS_BITS / 8;
                let at = |x: String| bad(format!("proof.{x}"));
                ResultProof::Paillier {
                    c: paillier::Ciphertext(big(p, "ciphertext", max).map_err(at)?),
                    proof: paillier::TallyProof { r: big(p, "randomness", max).map_err(at)? },
                }
            }
            other => {
                return Err(bad(format!("proof.scheme: {other:?} (expected \"elgamal\" or \"paillier\")")))
            }
        };
        Ok(TallyResult { election, ballots, counts, proof })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn stored(
        e: &Election,
        kind: HashKind,
        keys: &EaKeys,
        choices: &[usize],
        rng: &mut ChaCha20Rng,
    ) -> Vec<StoredBallot> {
        let id = e.id(kind);
        let l = usize::from(e.candidates);
        choices
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let voter = kind.hash(&(i as u64).to_le_bytes());
                let st = Statement { election: &id.0, voter: &voter.0 };
                let ballot = match (&keys.secret, e.check().unwrap()) {
                    (EaSecret::Elgamal(_), SchemeKey::Elgamal(k)) => {
                        elgamal::cast(&k, &st, c, l, rng).unwrap().encode()
                    }
                    (EaSecret::Paillier(_), SchemeKey::Paillier(k)) => {
                        paillier::cast(&k, &st, c, l, rng).unwrap().encode(k.public.modulus_bytes()).unwrap()
                    }
                    _ => unreachable!(),
                };
                StoredBallot { voter, ballot }
            })
            .collect()
    }

    #[test]
    fn keys_results_round_trip_and_tampering_fails_verification() {
        let kind = HashKind::Sha256;
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        for scheme in BallotScheme::ALL {
            let keys = EaKeys::generate(scheme, &mut rng).unwrap();
            let again = EaKeys::from_json(&keys.to_json().unwrap()).unwrap();
            let e = keys.election(3, 2, 50, 10, "test").unwrap();
            assert!(again.runs(&e) && again.token_seed == keys.token_seed);
            // The maximum is the election's, whatever the scheme.
            assert_eq!(e.voters(), Ok(10), "{scheme}");
            assert!(matches!(keys.election(3, 2, 50, 0, "test"), Err(TallyError::Election { .. })));
            let ballots = stored(&e, kind, &keys, &[0, 2, 2, 1, 2], &mut rng);
            let r = tally(&e, kind, &ballots, &again, &mut rng).unwrap();
            assert_eq!(r.counts, [1, 1, 3], "{scheme}");
            let parsed = TallyResult::from_json(&r.to_json().unwrap()).unwrap();
            assert_eq!(parsed, r);
            verify(&e, kind, &ballots, &parsed, &mut rng).unwrap();
            // Wrong counts, a missing ballot, another election: refused.
            let mut wrong = r.clone();
            wrong.counts.swap(0, 2);
            assert!(matches!(verify(&e, kind, &ballots, &wrong, &mut rng), Err(TallyError::Mismatch(_))));
            assert!(matches!(verify(&e, kind, &ballots[1..], &r, &mut rng), Err(TallyError::Mismatch(_))));
            let other = keys.election(3, 2, 51, 10, "test").unwrap();
            assert!(matches!(verify(&other, kind, &ballots, &r, &mut rng), Err(TallyError::Mismatch(_))));
            // A stored ballot that is not the voter's: its proof is bound to another voter.
            let mut swapped = ballots.clone();
            swapped[0].voter = kind.hash(b"someone else");
            assert!(matches!(tally(&e, kind, &swapped, &keys, &mut rng), Err(TallyError::Ballot { .. })));
            // Keys of another election.
            let stranger = EaKeys::generate(scheme, &mut rng).unwrap();
            assert!(matches!(
                tally(&e, kind, &ballots, &stranger, &mut rng),
                Err(TallyError::NotTheElection(_))
            ));
        }
        assert!(matches!(
            EaKeys::from_json("{\"scheme\":\"rsa\",\"token_seed\":\"00\"}"),
            Err(TallyError::KeyFile(_))
        ));
        // A damaged key file is described, never repeated.
        let seed = "5a".repeat(32);
        for text in [
            format!("{{\"scheme\":\"secret-{seed}\",\"token_seed\":\"{seed}\"}}"),
            format!("{{\"scheme\":\"elgamal\",\"token_seed\":\"{seed}\",\"elgamal_secret\":\"{seed}x\"}}"),
            format!("{{\"scheme\":\"paillier\",\"token_seed\":\"{seed}\",\"paillier_p\":\"{seed}\"}}"),
            format!("{{\"scheme\":\"elgamal\",\"token_seed\":\"{seed}\" \"{seed}\"}}"),
        ] {
            let e = EaKeys::from_json(&text).unwrap_err().to_string();
            assert!(!e.contains("5a5a"), "{e}");
        }
        assert!(matches!(TallyResult::from_json("{}"), Err(TallyError::ResultFile(_))));
    }
}
