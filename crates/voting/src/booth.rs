//! The files of the browser booth (`docs/VOTING.md`, "Voting from the booth"; the booth itself is
//! the explorer's `crates/explorer/booth`), read and written here for the command line:
//!
//! - [`VoterPackage`]: what `scalechain vote register --package-dir` hands each voter — the
//!   election id, the chain's hash function, the voter's Ed25519 seed and public key, and the
//!   registration token — and what the booth opens;
//! - [`BallotAudit`]: a ballot the voter chose to audit instead of casting (Benaloh's challenge),
//!   its randomness revealed, as the booth shows it; [`BallotAudit::check`] is the independent
//!   check `scalechain vote audit` runs;
//! - [`tracker`]: the ballot tracker the booth gives a voter and the bulletin board lists.
//!
//! Invariants: a package's seed appears in no error and no `Debug` output; text is bounded
//! ([`MAX_FILE`]) before it is parsed, lists before they are allocated; the encodings are the
//! booth's (`crates/explorer/tests/booth_interop.rs` checks both directions).

use curve25519_dalek::scalar::Scalar;
use serde_json::{json, Value};

use scalechain_types::{Hash, HashKind, Scheme, SecretKey, Signature};

use crate::app::{Election, SchemeKey, MAX_CANDIDATES};
use crate::elgamal::{self, Opening, WireBallot};
use crate::tally::{hex32, hex64};
use crate::{Statement, VoteError};

/// The `format` of a voter package.
pub const PACKAGE_FORMAT: &str = "scalechain-voter-package/1";
/// The `format` of a ballot audit.
pub const AUDIT_FORMAT: &str = "scalechain-ballot-audit/1";
/// The largest package or audit text read (an audit of 64 candidates is about 40 KB).
pub const MAX_FILE: usize = 256 * 1024;

/// Why a package or an audit was refused.
#[derive(Debug, thiserror::Error)]
pub enum BoothFileError {
    /// The text is not a voter package (the field and what is wrong; never the secret).
    #[error("voter package: {0}")]
    Package(String),
    /// The text is not a ballot audit.
    #[error("ballot audit: {0}")]
    Audit(String),
    /// The audit is of another election or chain than the one it is checked against.
    #[error("ballot audit: {0}")]
    Elsewhere(String),
    /// The audited ballot does not verify, or does not open to the shown choice.
    #[error("the audited ballot does not hold: {0}")]
    Fails(VoteError),
}

/// The ballot tracker: `H(encrypted ballot)` under the chain's hash function.
pub fn tracker(kind: HashKind, ballot: &[u8]) -> Hash {
    kind.hash(ballot)
}

fn object(text: &str, bad: fn(String) -> BoothFileError) -> Result<Value, BoothFileError> {
    if text.len() > MAX_FILE {
        return Err(bad(format!("{} bytes, more than {MAX_FILE}", text.len())));
    }
    let v: Value = serde_json::from_str(text).map_err(|_| bad("not JSON".into()))?;
    if !v.is_object() {
        return Err(bad("not a JSON object".into()));
    }
    Ok(v)
}

fn format_is(v: &Value, format: &str, bad: fn(String) -> BoothFileError) -> Result<(), BoothFileError> {
    match v.get("format").and_then(Value::as_str) {
        Some(f) if f == format => Ok(()),
        _ => Err(bad(format!("\"format\" is not \"{format}\""))),
    }
}

fn hash_kind(v: &Value, bad: fn(String) -> BoothFileError) -> Result<HashKind, BoothFileError> {
    v.get("hash")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("hash: missing or not a string".into()))?
        .parse()
        .map_err(|e| bad(format!("hash: {e}")))
}

/// A voter's package: everything the booth needs to cast one ballot.
#[derive(Clone)]
pub struct VoterPackage {
    /// The election's id.
    pub election: Hash,
    /// The chain's hash function.
    pub hash: HashKind,
    /// The voter's Ed25519 seed (the secret).
    pub seed: [u8; 32],
    /// The EA's registration token for the voter's key.
    pub token: Signature,
}

impl std::fmt::Debug for VoterPackage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VoterPackage(election {}, voter {})", self.election, hex::encode(self.voter_key()))
    }
}

impl VoterPackage {
    /// The voter's public key.
    pub fn voter_key(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(SecretKey::from_seed(Scheme::Ed25519, self.seed).public().as_bytes());
        out
    }

    /// The package file (JSON).
    pub fn to_json(&self) -> String {
        let v = json!({
            "format": PACKAGE_FORMAT,
            "election": self.election.to_string(),
            "hash": self.hash.name(),
            "voter_key": hex::encode(self.seed),
            "voter_pubkey": hex::encode(self.voter_key()),
            "token": hex::encode(self.token),
        });
        format!("{v:#}\n")
    }

    /// Reads [`VoterPackage::to_json`]'s output; `voter_pubkey`, if present, must be the seed's
    /// public key.
    pub fn from_json(text: &str) -> Result<VoterPackage, BoothFileError> {
        let bad = BoothFileError::Package;
        let v = object(text, bad)?;
        format_is(&v, PACKAGE_FORMAT, bad)?;
        let p = VoterPackage {
            election: Hash(hex32(&v, "election").map_err(bad)?),
            hash: hash_kind(&v, bad)?,
            seed: hex32(&v, "voter_key").map_err(bad)?,
            token: hex64(&v, "token").map_err(bad)?,
        };
        if v.get("voter_pubkey").is_some() && hex32(&v, "voter_pubkey").map_err(bad)? != p.voter_key() {
            return Err(bad(
                "\"voter_pubkey\" is not the public key of its \"voter_key\": the package is damaged".into(),
            ));
        }
        Ok(p)
    }
}

/// An audited ballot: the ballot, the choice it is said to encrypt, and the randomness that opens
/// it.
#[derive(Clone, Debug)]
pub struct BallotAudit {
    /// The election's id.
    pub election: Hash,
    /// The chain's hash function.
    pub hash: HashKind,
    /// The voter's public key (the proofs are bound to its hash).
    pub voter_key: [u8; 32],
    /// The encrypted ballot ([`elgamal::Ballot::encode`]).
    pub ballot: Vec<u8>,
    /// [`tracker`] of the ballot.
    pub tracker: Hash,
    /// What opens it.
    pub opening: Opening,
}

impl BallotAudit {
    /// The audit of `ballot` (encoded) opened by `opening`.
    pub fn new(
        election: Hash,
        hash: HashKind,
        voter_key: [u8; 32],
        ballot: Vec<u8>,
        opening: Opening,
    ) -> BallotAudit {
        let tracker = tracker(hash, &ballot);
        BallotAudit { election, hash, voter_key, ballot, tracker, opening }
    }

    /// The audit file (JSON), as the booth shows it.
    pub fn to_json(&self) -> String {
        let v = json!({
            "format": AUDIT_FORMAT,
            "election": self.election.to_string(),
            "hash": self.hash.name(),
            "voter_pubkey": hex::encode(self.voter_key),
            "ballot": hex::encode(&self.ballot),
            "tracker": self.tracker.to_string(),
            "choice": self.opening.choice,
            "randomness": self.opening.r.iter().map(|r| hex::encode(r.to_bytes())).collect::<Vec<_>>(),
        });
        format!("{v:#}\n")
    }

    /// Reads an audit file: its fields decoded (sizes bounded), not yet checked ([`BallotAudit::check`]).
    pub fn from_json(text: &str) -> Result<BallotAudit, BoothFileError> {
        let bad = BoothFileError::Audit;
        let v = object(text, bad)?;
        format_is(&v, AUDIT_FORMAT, bad)?;
        let ballot = v
            .get("ballot")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("ballot: missing or not a string".into()))?;
        let ballot = hex::decode(ballot).map_err(|_| bad("ballot: not hex".into()))?;
        let choice = v
            .get("choice")
            .and_then(Value::as_u64)
            .and_then(|c| usize::try_from(c).ok())
            .ok_or_else(|| bad("choice: not a candidate number".into()))?;
        let list = v
            .get("randomness")
            .and_then(Value::as_array)
            .filter(|l| l.len() <= MAX_CANDIDATES)
            .ok_or_else(|| bad(format!("randomness: not a list of at most {MAX_CANDIDATES} scalars")))?;
        let r = list
            .iter()
            .enumerate()
            .map(|(j, x)| {
                let mut b = [0u8; 32];
                x.as_str()
                    .and_then(|s| hex::decode_to_slice(s, &mut b).ok())
                    .ok_or_else(|| bad(format!("randomness[{j}]: not 64 hex digits")))?;
                Option::<Scalar>::from(Scalar::from_canonical_bytes(b))
                    .ok_or_else(|| bad(format!("randomness[{j}]: not a scalar below ℓ")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BallotAudit {
            election: Hash(hex32(&v, "election").map_err(bad)?),
            hash: hash_kind(&v, bad)?,
            voter_key: hex32(&v, "voter_pubkey").map_err(bad)?,
            tracker: Hash(hex32(&v, "tracker").map_err(bad)?),
            ballot,
            opening: Opening { choice, r },
        })
    }

    /// The independent check of an audit against the election `e` read from a chain hashing with
    /// `kind`: it is of this election, its tracker is its ballot's hash, the ballot decodes and its
    /// proofs verify for its voter, and each ciphertext opens with the revealed randomness to the
    /// shown choice. Returns the choice.
    pub fn check(&self, kind: HashKind, e: &Election) -> Result<usize, BoothFileError> {
        let elsewhere = BoothFileError::Elsewhere;
        if self.hash != kind {
            return Err(elsewhere(format!("made on a chain hashing with {}, not {kind}", self.hash)));
        }
        let id = e.id(kind);
        if self.election != id {
            return Err(elsewhere(format!("of election {}, not {id}", self.election)));
        }
        if self.tracker != tracker(kind, &self.ballot) {
            return Err(BoothFileError::Audit(format!(
                "the tracker {} is not the ballot's hash",
                self.tracker
            )));
        }
        let k = match e.check() {
            Ok(SchemeKey::Elgamal(k)) => k,
            Ok(SchemeKey::Paillier(_)) => {
                return Err(elsewhere(format!(
                    "election {id} is a paillier election: the booth audits elgamal ballots"
                )))
            }
            Err(x) => return Err(elsewhere(format!("election {id}: {}: {}", x.rule, x.detail))),
        };
        let wire =
            WireBallot::decode(&self.ballot).map_err(|x| BoothFileError::Audit(format!("ballot: {x}")))?;
        let voter = kind.hash(&self.voter_key);
        let st = Statement { election: &id.0, voter: &voter.0 };
        elgamal::verify_wire(&k, &st, &wire, usize::from(e.candidates)).map_err(BoothFileError::Fails)?;
        elgamal::check_opening(&k, wire.ballot(), &self.opening).map_err(BoothFileError::Fails)?;
        Ok(self.opening.choice)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::tally::EaKeys;
    use crate::BallotScheme;

    fn election(rng: &mut ChaCha20Rng) -> (EaKeys, Election) {
        let keys = EaKeys::generate(BallotScheme::Elgamal, rng).unwrap();
        let e = keys.election(3, 1, 50, 10, "booth").unwrap();
        (keys, e)
    }

    #[test]
    fn a_package_round_trips_and_never_shows_its_seed() {
        let kind = HashKind::Blake3;
        let p = VoterPackage { election: Hash([4; 32]), hash: kind, seed: [0x3f; 32], token: [9; 64] };
        let text = p.to_json();
        let back = VoterPackage::from_json(&text).unwrap();
        assert_eq!((back.election, back.hash, back.seed, back.token), (p.election, kind, p.seed, p.token));
        let secret = hex::encode(p.seed);
        assert!(!format!("{p:?}").contains(&secret[..8]));
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["voter_key"] = json!(format!("{}z", &secret[..63]));
        let e = VoterPackage::from_json(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains("voter_key") && !e.contains(&secret[..8]), "{e}");
        v["voter_key"] = json!(hex::encode([1u8; 32]));
        let e = VoterPackage::from_json(&v.to_string()).unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
        for (text, says) in [("my diary", "not JSON"), ("[1]", "not a JSON object"), ("{}", "\"format\"")] {
            let e = VoterPackage::from_json(text).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
        let long = " ".repeat(MAX_FILE + 1);
        assert!(VoterPackage::from_json(&long).unwrap_err().to_string().contains("more than"));
    }

    #[test]
    fn an_audit_opens_to_its_choice_and_to_no_other() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let kind = HashKind::Sha256;
        let (_, e) = election(&mut rng);
        let SchemeKey::Elgamal(k) = e.check().unwrap() else { panic!("elgamal") };
        let id = e.id(kind);
        let voter_key = [7u8; 32];
        let voter = kind.hash(&voter_key);
        let st = Statement { election: &id.0, voter: &voter.0 };
        let (ballot, opening) = elgamal::cast_opened(&k, &st, 2, 3, &mut rng).unwrap();
        let audit = BallotAudit::new(id, kind, voter_key, ballot.encode(), opening);
        let back = BallotAudit::from_json(&audit.to_json()).unwrap();
        assert_eq!(back.check(kind, &e).unwrap(), 2);
        // The shown choice must be the encrypted one; randomness must open the ciphertexts.
        let mut lie = back.clone();
        lie.opening.choice = 0;
        assert!(matches!(
            lie.check(kind, &e),
            Err(BoothFileError::Fails(VoteError::NotOpened { candidate: 0, .. }))
        ));
        let mut wrong = back.clone();
        wrong.opening.r[1] = Scalar::ONE;
        assert!(matches!(
            wrong.check(kind, &e),
            Err(BoothFileError::Fails(VoteError::NotOpened { candidate: 1, .. }))
        ));
        // Proofs bound to the voter: the same ballot under another key fails.
        let mut other = back.clone();
        other.voter_key = [8; 32];
        assert!(matches!(other.check(kind, &e), Err(BoothFileError::Fails(VoteError::BadBitProof { .. }))));
        // Another election, another chain, a tracker that is not the ballot's.
        let mut rng2 = ChaCha20Rng::seed_from_u64(4);
        let (_, e2) = election(&mut rng2);
        assert!(matches!(back.check(kind, &e2), Err(BoothFileError::Elsewhere(_))));
        assert!(matches!(back.check(HashKind::Blake3, &e), Err(BoothFileError::Elsewhere(_))));
        let mut tracked = back;
        tracked.tracker = Hash([0; 32]);
        assert!(matches!(tracked.check(kind, &e), Err(BoothFileError::Audit(_))));
    }
}
