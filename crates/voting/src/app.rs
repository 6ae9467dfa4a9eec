//! The voting application as a ScaleChain application module (transaction kind [`VOTE_KIND`]).
//!
//! Two messages travel in a vote transaction's `data` (the transaction has no inputs or outputs):
//!
//! - **Election** (tag 0), published by the election authority (EA): candidates `L`, the voting
//!   window `[start, end]` in block heights, the ballot scheme, the EA's Ed25519 token key, the
//!   election key and a label. Its id is `H(encoding)` under the chain's hash function.
//! - **Ballot** (tag 1): the full election descriptor, the voter's Ed25519 key, the registration
//!   token `t = Sign(Sk_ea, H("scalechain/vote/token" ‖ election id ‖ H(Pk_voter)))`, the encrypted
//!   ballot with its proofs (bound to the election id and `H(Pk_voter)`), and the voter's signature
//!   over all of it.
//!
//! Every expensive check — token, voter signature, proofs — needs only the ballot itself, so it
//! runs in [`AppModule::check_stateless`], in parallel across a block. [`AppModule::apply`] then
//! does the cheap, ordered part: the election exists with the same descriptor, the block is in
//! the window, and the voter has not voted (the ballot is stored under `H(Pk_voter)`: one ballot
//! per voter, inside a block or across blocks).

use scalechain_consensus::{AppContext, AppError, AppModule, AppOverlay, Params};
use scalechain_types::codec::{put_var_bytes, DecodeError, Reader};
use scalechain_types::keys::verify_ed25519;
use scalechain_types::{Hash, HashKind, Signature, Tx, TxKind};

use crate::elgamal::{self, Ballot, PublicKey, Statement};
use crate::VoteError;

/// The transaction kind of the voting module.
pub const VOTE_KIND: TxKind = TxKind(2);

/// Ballot schemes.
pub const SCHEME_ELGAMAL: u8 = 0;

/// Longest election label.
pub const MAX_LABEL: usize = 64;

/// State key prefixes (inside the module's namespace).
const ELECTION_PREFIX: u8 = b'e';
const BALLOT_PREFIX: u8 = b'b';

/// An election as the EA publishes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Election {
    /// Number of candidates.
    pub candidates: u8,
    /// First height at which ballots count.
    pub start: u64,
    /// Last height at which ballots count.
    pub end: u64,
    /// Ballot scheme ([`SCHEME_ELGAMAL`]).
    pub scheme: u8,
    /// The EA's Ed25519 key that signs registration tokens.
    pub token_key: [u8; 32],
    /// The election key (compressed ristretto255 point).
    pub election_key: [u8; 32],
    /// A label for people.
    pub label: Vec<u8>,
}

/// A cast ballot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CastBallot {
    /// The election it is for (the full descriptor).
    pub election: Election,
    /// The voter's Ed25519 key.
    pub voter_key: [u8; 32],
    /// The EA's registration token for this voter.
    pub token: Signature,
    /// The encrypted ballot (see [`Ballot::encode`]).
    pub ballot: Vec<u8>,
    /// The voter's signature over everything above.
    pub signature: Signature,
}

/// A vote transaction's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Publish an election.
    Election(Election),
    /// Cast a ballot.
    Ballot(CastBallot),
}

impl Election {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.candidates);
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.push(self.scheme);
        out.extend_from_slice(&self.token_key);
        out.extend_from_slice(&self.election_key);
        put_var_bytes(out, &self.label);
    }

    /// The canonical encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }

    fn decode_from(r: &mut Reader<'_>) -> Result<Election, DecodeError> {
        let candidates = r.u8("election.candidates")?;
        let start = r.u64("election.start")?;
        let end = r.u64("election.end")?;
        let scheme = r.u8("election.scheme")?;
        let token_key = r.array("election.token_key")?;
        let election_key = r.array("election.election_key")?;
        let n = r.count("election.label", 1)?;
        if n > MAX_LABEL {
            return Err(r.invalid("election.label", format!("{n} bytes (at most {MAX_LABEL})")));
        }
        let label = r.bytes("election.label", n)?.to_vec();
        Ok(Election { candidates, start, end, scheme, token_key, election_key, label })
    }

    /// The election id: `H(encoding)`.
    pub fn id(&self, kind: HashKind) -> Hash {
        kind.hash(&self.encode())
    }

    /// The election key as a point.
    pub fn key(&self) -> Option<PublicKey> {
        curve25519_dalek::ristretto::CompressedRistretto(self.election_key).decompress().map(PublicKey)
    }

    /// The descriptor's own rules: candidates, window, scheme, key.
    fn check(&self) -> Result<PublicKey, AppError> {
        if self.candidates == 0 || usize::from(self.candidates) > elgamal::MAX_CANDIDATES {
            return Err(err(
                "vote-bad-election",
                format!("{} candidates (1 to {})", self.candidates, elgamal::MAX_CANDIDATES),
            ));
        }
        if self.start > self.end {
            return Err(err("vote-bad-election", format!("window {}..{} is empty", self.start, self.end)));
        }
        if self.scheme != SCHEME_ELGAMAL {
            return Err(err("vote-bad-election", format!("unknown ballot scheme {}", self.scheme)));
        }
        self.key().ok_or_else(|| err("vote-bad-election", "the election key is not a ristretto255 point"))
    }
}

/// The message a registration token signs.
pub fn token_message(kind: HashKind, election_id: &Hash, voter_key: &[u8; 32]) -> Hash {
    kind.hash_parts(&[b"scalechain/vote/token", &election_id.0, &kind.hash(voter_key).0])
}

impl CastBallot {
    fn encode_unsigned(&self, out: &mut Vec<u8>) {
        self.election.encode_to(out);
        out.extend_from_slice(&self.voter_key);
        out.extend_from_slice(&self.token);
        put_var_bytes(out, &self.ballot);
    }

    /// The message the voter signs.
    pub fn signing_message(&self, kind: HashKind) -> Hash {
        let mut body = Vec::new();
        self.encode_unsigned(&mut body);
        kind.hash_parts(&[b"scalechain/vote/ballot", &body])
    }

    /// `H(Pk_voter)`: where the ballot is stored.
    pub fn voter_id(&self, kind: HashKind) -> Hash {
        kind.hash(&self.voter_key)
    }
}

impl Message {
    /// The canonical encoding (a vote transaction's `data`).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Message::Election(e) => {
                out.push(0);
                e.encode_to(&mut out);
            }
            Message::Ballot(b) => {
                out.push(1);
                b.encode_unsigned(&mut out);
                out.extend_from_slice(&b.signature);
            }
        }
        out
    }

    /// Decodes exactly.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let mut r = Reader::new(bytes);
        let m = match r.u8("vote.tag")? {
            0 => Message::Election(Election::decode_from(&mut r)?),
            1 => {
                let election = Election::decode_from(&mut r)?;
                let voter_key = r.array("ballot.voter_key")?;
                let token = r.array("ballot.token")?;
                let ballot = r.var_bytes("ballot.ballot")?;
                let signature = r.array("ballot.signature")?;
                Message::Ballot(CastBallot { election, voter_key, token, ballot, signature })
            }
            t => return Err(r.invalid("vote.tag", format!("unknown message {t}"))),
        };
        r.finish()?;
        Ok(m)
    }

    /// The transaction carrying this message.
    pub fn into_tx(self) -> Tx {
        Tx { version: 1, kind: VOTE_KIND, inputs: vec![], outputs: vec![], data: self.encode() }
    }
}

fn err(rule: &'static str, detail: impl Into<String>) -> AppError {
    AppError { rule, detail: detail.into() }
}

/// The rule name of a proof failure.
pub fn proof_rule(e: &VoteError) -> &'static str {
    match e {
        VoteError::BadBitProof { .. } => "vote-bad-choice-proof",
        VoteError::BadSumProof => "vote-bad-sum-proof",
        VoteError::WrongLength { .. } => "vote-wrong-candidates",
        _ => "vote-bad-proof",
    }
}

/// Every stateless check of a ballot: descriptor, token, voter signature, proofs.
pub fn check_ballot(kind: HashKind, b: &CastBallot) -> Result<Ballot, AppError> {
    let key = b.election.check()?;
    let id = b.election.id(kind);
    verify_ed25519(&b.election.token_key, token_message(kind, &id, &b.voter_key).as_bytes(), &b.token)
        .map_err(|e| err("vote-bad-token", format!("the registration token does not verify ({e})")))?;
    verify_ed25519(&b.voter_key, b.signing_message(kind).as_bytes(), &b.signature)
        .map_err(|e| err("vote-bad-signature", format!("the voter's signature does not verify ({e})")))?;
    let ballot = Ballot::decode(&b.ballot).map_err(|e| err("vote-malformed", format!("ballot: {e}")))?;
    let voter = b.voter_id(kind);
    let st = Statement { election: &id.0, voter: &voter.0 };
    elgamal::verify_ballot(&key, &st, &ballot, usize::from(b.election.candidates))
        .map_err(|e| err(proof_rule(&e), e.to_string()))?;
    Ok(ballot)
}

/// The state key of an election.
pub fn election_key(id: &Hash) -> Vec<u8> {
    let mut k = vec![ELECTION_PREFIX];
    k.extend_from_slice(&id.0);
    k
}

/// The state key of a voter's ballot (module namespace excluded).
pub fn ballot_key(id: &Hash, voter: &Hash) -> Vec<u8> {
    let mut k = vec![BALLOT_PREFIX];
    k.extend_from_slice(&id.0);
    k.extend_from_slice(&voter.0);
    k
}

/// The full state-key prefix (namespace byte included) under which an election's ballots lie.
pub fn ballots_prefix(id: &Hash) -> Vec<u8> {
    let mut k = vec![VOTE_KIND.0, BALLOT_PREFIX];
    k.extend_from_slice(&id.0);
    k
}

/// The voting module.
#[derive(Clone, Copy, Debug, Default)]
pub struct VotingModule;

impl AppModule for VotingModule {
    fn kind(&self) -> TxKind {
        VOTE_KIND
    }

    fn name(&self) -> &str {
        "voting"
    }

    fn check_stateless(&self, tx: &Tx, params: &Params) -> Result<(), AppError> {
        if !tx.inputs.is_empty() || !tx.outputs.is_empty() {
            return Err(err("vote-not-bare", "a vote transaction has no inputs or outputs"));
        }
        match Message::decode(&tx.data).map_err(|e| err("vote-malformed", e.to_string()))? {
            Message::Election(e) => e.check().map(|_| ()),
            Message::Ballot(b) => check_ballot(params.hash, &b).map(|_| ()),
        }
    }

    fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError> {
        let kind = ctx.params.hash;
        match Message::decode(&tx.data).map_err(|e| err("vote-malformed", e.to_string()))? {
            Message::Election(e) => {
                let id = e.id(kind);
                if state.get(&election_key(&id)).is_some() {
                    return Err(err("vote-election-exists", format!("election {id} is already published")));
                }
                state.put(&election_key(&id), e.encode());
                Ok(())
            }
            Message::Ballot(b) => {
                let id = b.election.id(kind);
                if state.get(&election_key(&id)).is_none() {
                    return Err(err("vote-unknown-election", format!("election {id} is not published")));
                }
                if ctx.height < b.election.start || ctx.height > b.election.end {
                    return Err(err(
                        "vote-outside-window",
                        format!(
                            "height {} is outside the voting window {}..={}",
                            ctx.height, b.election.start, b.election.end
                        ),
                    ));
                }
                let key = ballot_key(&id, &b.voter_id(kind));
                if state.get(&key).is_some() {
                    return Err(err(
                        "vote-double-vote",
                        format!("voter {} has already voted", b.voter_id(kind)),
                    ));
                }
                state.put(&key, b.ballot);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn election() -> Election {
        Election {
            candidates: 4,
            start: 10,
            end: 20,
            scheme: SCHEME_ELGAMAL,
            token_key: [3; 32],
            election_key: curve25519_dalek::constants::RISTRETTO_BASEPOINT_COMPRESSED.to_bytes(),
            label: b"mayor".to_vec(),
        }
    }

    #[test]
    fn messages_round_trip_and_refuse_trailing_bytes() {
        let e = Message::Election(election());
        let b = Message::Ballot(CastBallot {
            election: election(),
            voter_key: [5; 32],
            token: [6; 64],
            ballot: vec![1, 2, 3],
            signature: [7; 64],
        });
        for m in [e, b] {
            let bytes = m.encode();
            assert_eq!(Message::decode(&bytes), Ok(m.clone()));
            let mut long = bytes.clone();
            long.push(0);
            assert!(Message::decode(&long).is_err());
            assert!(Message::decode(&bytes[..bytes.len() - 1]).is_err());
        }
        let mut long_label = election();
        long_label.label = vec![0; MAX_LABEL + 1];
        assert!(Message::decode(&Message::Election(long_label).encode()).is_err());
        assert!(election().check().is_ok());
        let mut empty = election();
        empty.start = 30;
        assert_eq!(empty.check().unwrap_err().rule, "vote-bad-election");
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(m) = Message::decode(&bytes) {
                prop_assert_eq!(m.encode(), bytes);
            }
        }
    }
}
