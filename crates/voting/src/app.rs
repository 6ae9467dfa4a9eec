//! The voting application as a ScaleChain application module (transaction kind [`VOTE_KIND`]).
//!
//! Two messages travel in a vote transaction's `data` (the transaction has no inputs or outputs):
//!
//! - **Election** (tag 0), published by the election authority (EA): candidates `L`, the voting
//!   window `[start, end]` in block heights, the ballot scheme, the EA's Ed25519 token key, the
//!   election key — the most ballots the election counts ([`Election::voters`]) followed by the
//!   scheme's public key — and a label. Its id is `H(encoding)` under the chain's hash function.
//! - **Ballot** (tag 1): the full election descriptor, the voter's Ed25519 key, the registration
//!   token `t = Sign(Sk_ea, H("scalechain/vote/token" ‖ election id ‖ H(Pk_voter)))`, the encrypted
//!   ballot with its proofs (bound to the election id and `H(Pk_voter)`), and the voter's signature
//!   over all of it.
//!
//! The checks that need only the ballot itself — descriptor, token, voter signature, decoding,
//! the ballot's length, `c ∈ Z*_{N²}` for Paillier — run in [`AppModule::check_stateless`], in
//! parallel across a block. The zero-knowledge proofs are checked by
//! [`AppModule::precheck_batch`] (ElGamal: one random linear combination per election and
//! chunk, [`elgamal::verify_wire_ballots`]; Paillier: [`paillier::verify_ballot`] for each
//! ballot, since its batch equation cannot be trusted to agree with the single check; consensus
//! spreads the chunks over rayon) before [`AppModule::apply`] runs. `apply` does the ordered part — the election
//! exists with the same descriptor, the block is in the window, the voter has not voted (the
//! ballot is stored under `H(Pk_voter)`: one ballot per voter, inside a block or across blocks),
//! the election holds fewer ballots than its maximum (counted under [`ballot_count_key`]) —
//! and then takes the proofs' verdict from the batch, or checks them itself when no batch ran
//! (`sequential` mode). The verdicts are the same either way.
//!
//! [`AppModule::conflict_keys`] gives the mempool the same one-ballot-per-voter rule before any
//! block: a pooled ballot holds [`ballot_conflict_key`] (election id and voter), a pooled
//! election [`election_conflict_key`], and a second pooled transaction claiming either is refused.
//! The maximum is judged at admission against the chain's count only: two ballots pooled for
//! an election's last place are both admitted, and the miner's template replays them on the
//! tip's state (`scalechain_consensus::app::AppSequence`), so its block holds the first only.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use scalechain_consensus::app::Precheck;
use scalechain_consensus::{AppContext, AppError, AppModule, AppOverlay, Params};
use scalechain_types::codec::{put_var_bytes, DecodeError, Reader};
use scalechain_types::keys::verify_ed25519;
use scalechain_types::{Hash, HashKind, Signature, Tx, TxKind};

use crate::elgamal::{self, WireBallot};
use crate::paillier;
use crate::{Statement, VoteError};

/// The transaction kind of the voting module.
pub const VOTE_KIND: TxKind = TxKind(2);

/// Ballot scheme byte of [`crate::BallotScheme::Elgamal`].
pub const SCHEME_ELGAMAL: u8 = 0;

/// Ballot scheme byte of [`crate::BallotScheme::Paillier`].
pub const SCHEME_PAILLIER: u8 = 1;

/// Longest election label.
pub const MAX_LABEL: usize = 64;

/// Longest election key (a Paillier key: voter count and a 4096-bit modulus).
pub const MAX_ELECTION_KEY: usize = paillier::ElectionKey::MAX_ENCODED;

/// Bytes of the voter count that opens an election key (both schemes): a u64, little-endian.
pub const VOTERS_BYTES: usize = 8;

/// The most candidates an election may have (both schemes).
pub const MAX_CANDIDATES: usize = elgamal::MAX_CANDIDATES;

/// State key prefixes (inside the module's namespace).
const ELECTION_PREFIX: u8 = b'e';
const BALLOT_PREFIX: u8 = b'b';
const BALLOT_COUNT_PREFIX: u8 = b'n';

/// An election as the EA publishes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Election {
    /// Number of candidates.
    pub candidates: u8,
    /// First height at which ballots count.
    pub start: u64,
    /// Last height at which ballots count.
    pub end: u64,
    /// Ballot scheme ([`SCHEME_ELGAMAL`] or [`SCHEME_PAILLIER`]).
    pub scheme: u8,
    /// The EA's Ed25519 key that signs registration tokens.
    pub token_key: [u8; 32],
    /// The election key: the most ballots the election counts ([`VOTERS_BYTES`], see
    /// [`Election::voters`]), then the scheme's key: for `elgamal` a compressed ristretto255
    /// point (32 bytes, [`elgamal_election_key`]); for `paillier` `N`
    /// ([`paillier::ElectionKey::encode`]).
    pub election_key: Vec<u8>,
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
    /// The encrypted ballot ([`elgamal::Ballot::encode`] or [`paillier::Ballot::encode`]).
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

/// An election's key, by scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemeKey {
    /// `elgamal`: the election key `K`.
    Elgamal(elgamal::PublicKey),
    /// `paillier`: `N` and the voter count.
    Paillier(paillier::ElectionKey),
}

/// An encrypted ballot decoded for its election's scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodedBallot {
    /// An `elgamal` ballot, with its wire bytes for hashing.
    Elgamal(Box<WireBallot>),
    /// A `paillier` ballot.
    Paillier(paillier::Ballot),
}

impl SchemeKey {
    /// Decodes a ballot for this key (`vote-malformed` if it does not decode).
    pub fn decode_ballot(&self, bytes: &[u8]) -> Result<DecodedBallot, AppError> {
        let bad = |e: DecodeError| err("vote-malformed", format!("ballot: {e}"));
        match self {
            SchemeKey::Elgamal(_) => {
                WireBallot::decode(bytes).map(|w| DecodedBallot::Elgamal(Box::new(w))).map_err(bad)
            }
            SchemeKey::Paillier(k) => {
                paillier::Ballot::decode(bytes, k).map(DecodedBallot::Paillier).map_err(bad)
            }
        }
    }
}

impl Election {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.candidates);
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.end.to_le_bytes());
        out.push(self.scheme);
        out.extend_from_slice(&self.token_key);
        put_var_bytes(out, &self.election_key);
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
        let n = r.count("election.election_key", 1)?;
        if n > MAX_ELECTION_KEY {
            return Err(r.invalid("election.election_key", format!("{n} bytes (at most {MAX_ELECTION_KEY})")));
        }
        let election_key = r.bytes("election.election_key", n)?.to_vec();
        let n = r.count("election.label", 1)?;
        if n > MAX_LABEL {
            return Err(r.invalid("election.label", format!("{n} bytes (at most {MAX_LABEL})")));
        }
        let label = r.bytes("election.label", n)?.to_vec();
        Ok(Election { candidates, start, end, scheme, token_key, election_key, label })
    }

    /// Decodes [`Election::encode`] exactly (as stored in the module's state).
    pub fn decode(bytes: &[u8]) -> Result<Election, DecodeError> {
        let mut r = Reader::new(bytes);
        let e = Election::decode_from(&mut r)?;
        r.finish()?;
        Ok(e)
    }

    /// The election id: `H(encoding)`.
    pub fn id(&self, kind: HashKind) -> Hash {
        kind.hash(&self.encode())
    }

    /// The most ballots the election counts: the voter count that opens its election key
    /// (both schemes; for `paillier` it also fixes the encoding, so that no tally of at most
    /// that many ballots overflows a candidate's slot). The chain refuses the ballot past it
    /// (`vote-election-full`), and `vote register` mints no more tokens. `vote-bad-election` if
    /// the key is too short to hold it.
    pub fn voters(&self) -> Result<u64, AppError> {
        self.election_key.first_chunk::<VOTERS_BYTES>().map(|b| u64::from_le_bytes(*b)).ok_or_else(|| {
            err(
                "vote-bad-election",
                format!(
                    "an election key of {} bytes has no voter count ({VOTERS_BYTES} bytes)",
                    self.election_key.len()
                ),
            )
        })
    }

    /// The descriptor's own rules — candidates, window, scheme, key — and its key. Every
    /// election counts at least one voter. A Paillier key needs a modulus of at least
    /// [`paillier::ELECTION_MIN_MODULUS_BITS`] bits holding the candidates' encoding.
    pub fn check(&self) -> Result<SchemeKey, AppError> {
        if self.candidates == 0 || usize::from(self.candidates) > MAX_CANDIDATES {
            return Err(err(
                "vote-bad-election",
                format!("{} candidates (1 to {MAX_CANDIDATES})", self.candidates),
            ));
        }
        if self.start > self.end {
            return Err(err(
                "vote-bad-election",
                format!(
                    "the window from height {} to height {} is empty (its start is after its end)",
                    self.start, self.end
                ),
            ));
        }
        if self.voters()? == 0 {
            return Err(err("vote-bad-election", "an election counts at least one voter, not 0"));
        }
        match self.scheme {
            SCHEME_ELGAMAL => {
                let point = self.election_key.get(VOTERS_BYTES..).unwrap_or_default();
                let bytes: [u8; 32] = point.try_into().map_err(|_| {
                    err(
                        "vote-bad-election",
                        format!(
                            "an elgamal key has {} bytes (voter count and point), not {}",
                            VOTERS_BYTES + 32,
                            self.election_key.len()
                        ),
                    )
                })?;
                curve25519_dalek::ristretto::CompressedRistretto(bytes)
                    .decompress()
                    .map(|p| SchemeKey::Elgamal(elgamal::PublicKey(p)))
                    .ok_or_else(|| err("vote-bad-election", "the election key is not a ristretto255 point"))
            }
            SCHEME_PAILLIER => {
                let key = paillier::ElectionKey::decode(&self.election_key)
                    .map_err(|e| err("vote-bad-election", format!("paillier key: {e}")))?;
                if key.public.bits() < paillier::ELECTION_MIN_MODULUS_BITS {
                    return Err(err(
                        "vote-bad-election",
                        format!(
                            "a {}-bit modulus (elections need at least {})",
                            key.public.bits(),
                            paillier::ELECTION_MIN_MODULUS_BITS
                        ),
                    ));
                }
                key.check_fits(usize::from(self.candidates))
                    .map_err(|e| err("vote-bad-election", format!("paillier key: {e}")))?;
                Ok(SchemeKey::Paillier(key))
            }
            s => Err(err("vote-bad-election", format!("unknown ballot scheme {s}"))),
        }
    }
}

/// The election key of an `elgamal` election counting at most `voters` ballots: `voters`
/// (u64 little-endian), then `K` compressed.
pub fn elgamal_election_key(voters: u64, k: &elgamal::PublicKey) -> Vec<u8> {
    let mut out = voters.to_le_bytes().to_vec();
    out.extend_from_slice(&k.0.compress().to_bytes());
    out
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
    AppError::invalid(rule, detail)
}

/// A refusal by the chain's state: an honest peer that has not seen the same chain may relay
/// the transaction ([`AppError::on_state`]).
fn state_err(rule: &'static str, detail: impl Into<String>) -> AppError {
    AppError::on_state(rule, detail)
}

/// The rule name of a ballot check's failure.
pub fn proof_rule(e: &VoteError) -> &'static str {
    match e {
        VoteError::BadBitProof { .. } | VoteError::BadMembershipProof => "vote-bad-choice-proof",
        VoteError::BadSumProof => "vote-bad-sum-proof",
        VoteError::WrongLength { .. } => "vote-wrong-candidates",
        VoteError::CiphertextNotUnit => "vote-ciphertext-not-unit",
        VoteError::Arithmetic(_) => "vote-arithmetic-failure",
        _ => "vote-bad-proof",
    }
}

fn vote_err(e: VoteError) -> AppError {
    err(proof_rule(&e), e.to_string())
}

/// A ballot through its stateless checks: the election's key and the decoded ballot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedBallot {
    /// The election's key.
    pub key: SchemeKey,
    /// The decoded ballot.
    pub ballot: DecodedBallot,
}

/// The stateless checks of a ballot but its proofs: descriptor (`vote-bad-election`), token
/// (`vote-bad-token`), voter signature (`vote-bad-signature`), decoding (`vote-malformed`), one
/// entry per candidate (`vote-wrong-candidates`) and, for Paillier, `c ∈ Z*_{N²}`
/// (`vote-ciphertext-not-unit`).
pub fn check_ballot_stateless(kind: HashKind, b: &CastBallot) -> Result<CheckedBallot, AppError> {
    let key = b.election.check()?;
    let id = b.election.id(kind);
    verify_ed25519(&b.election.token_key, token_message(kind, &id, &b.voter_key).as_bytes(), &b.token)
        .map_err(|e| err("vote-bad-token", format!("the registration token does not verify ({e})")))?;
    verify_ed25519(&b.voter_key, b.signing_message(kind).as_bytes(), &b.signature)
        .map_err(|e| err("vote-bad-signature", format!("the voter's signature does not verify ({e})")))?;
    let ballot = decode_for(&key, b)?;
    Ok(CheckedBallot { key, ballot })
}

/// Decodes a ballot for its election's key: `vote-malformed`, `vote-wrong-candidates`, and for
/// Paillier `vote-ciphertext-not-unit`.
fn decode_for(key: &SchemeKey, b: &CastBallot) -> Result<DecodedBallot, AppError> {
    let ballot = key.decode_ballot(&b.ballot)?;
    let expected = usize::from(b.election.candidates);
    let got = match &ballot {
        DecodedBallot::Elgamal(w) => w.ballot().cts.len(),
        DecodedBallot::Paillier(p) => p.proof.a.len(),
    };
    if got != expected {
        return Err(vote_err(VoteError::WrongLength { expected, got }));
    }
    if let (SchemeKey::Paillier(k), DecodedBallot::Paillier(p)) = (key, &ballot) {
        k.public.check_ciphertext(p.c.value()).map_err(vote_err)?;
    }
    Ok(ballot)
}

/// The proofs of a ballot that passed [`check_ballot_stateless`], checked alone
/// (`vote-bad-choice-proof`, `vote-bad-sum-proof`).
pub fn check_ballot_proofs(kind: HashKind, b: &CastBallot, checked: &CheckedBallot) -> Result<(), AppError> {
    let id = b.election.id(kind);
    let voter = b.voter_id(kind);
    let st = Statement { election: &id.0, voter: &voter.0 };
    let l = usize::from(b.election.candidates);
    match (&checked.key, &checked.ballot) {
        (SchemeKey::Elgamal(k), DecodedBallot::Elgamal(w)) => elgamal::verify_wire(k, &st, w, l),
        (SchemeKey::Paillier(k), DecodedBallot::Paillier(p)) => paillier::verify_ballot(k, &st, p, l),
        _ => return Err(err("vote-malformed", "the ballot is not of the election's scheme")),
    }
    .map_err(vote_err)
}

/// Every check of a ballot that needs no state: [`check_ballot_stateless`], then
/// [`check_ballot_proofs`].
pub fn check_ballot(kind: HashKind, b: &CastBallot) -> Result<CheckedBallot, AppError> {
    let checked = check_ballot_stateless(kind, b)?;
    check_ballot_proofs(kind, b, &checked)?;
    Ok(checked)
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

/// The state key of the number of ballots an election holds (module namespace excluded): a u64,
/// little-endian; absent before its first ballot.
pub fn ballot_count_key(id: &Hash) -> Vec<u8> {
    let mut k = vec![BALLOT_COUNT_PREFIX];
    k.extend_from_slice(&id.0);
    k
}

/// The full state-key prefix (namespace byte included) under which an election's ballots lie.
pub fn ballots_prefix(id: &Hash) -> Vec<u8> {
    let mut k = vec![VOTE_KIND.0, BALLOT_PREFIX];
    k.extend_from_slice(&id.0);
    k
}

/// The mempool key a ballot holds while pooled ([`AppModule::conflict_keys`]):
/// `H("scalechain/vote/ballot-key" ‖ election id ‖ H(Pk_voter))`, so a voter's second ballot
/// for an election is refused at admission rather than pooled beside the first.
pub fn ballot_conflict_key(kind: HashKind, election_id: &Hash, voter: &Hash) -> Hash {
    kind.hash_parts(&[b"scalechain/vote/ballot-key", &election_id.0, &voter.0])
}

/// The mempool key an election holds while pooled: `H("scalechain/vote/election-key" ‖ id)`
/// (two transactions publishing one election cannot both enter a block).
pub fn election_conflict_key(kind: HashKind, election_id: &Hash) -> Hash {
    kind.hash_parts(&[b"scalechain/vote/election-key", &election_id.0])
}

/// The voting module.
#[derive(Clone, Copy, Debug, Default)]
pub struct VotingModule;

/// Ballots of one election in a pre-check batch: `(index in the batch, voter id, ballot)`.
type Group = (SchemeKey, Hash, usize, Vec<(usize, Hash, DecodedBallot)>);

impl AppModule for VotingModule {
    fn kind(&self) -> TxKind {
        VOTE_KIND
    }

    fn name(&self) -> &str {
        "voting"
    }

    /// An election may spend coins (to pay its fee) and make outputs (its change); a ballot
    /// has neither: it rides fee-less ([`AppModule::fee_less_group`]), and an input would tie a
    /// voter's ballot to coins.
    fn check_stateless(&self, tx: &Tx, params: &Params) -> Result<(), AppError> {
        match Message::decode(&tx.data).map_err(|e| err("vote-malformed", e.to_string()))? {
            Message::Election(e) => e.check().map(|_| ()),
            Message::Ballot(b) => {
                if !tx.inputs.is_empty() || !tx.outputs.is_empty() {
                    return Err(err("vote-not-bare", "a ballot has no inputs or outputs"));
                }
                check_ballot_stateless(params.hash, &b).map(|_| ())
            }
        }
    }

    /// Ballots ride fee-less, each election's in a group of its own (so one election's
    /// ballots cannot crowd out another's); elections pay a fee like transfers.
    fn fee_less_group(&self, tx: &Tx, params: &Params) -> Option<Hash> {
        match Message::decode(&tx.data) {
            Ok(Message::Ballot(b)) => Some(b.election.id(params.hash)),
            Ok(Message::Election(_)) | Err(_) => None,
        }
    }

    fn apply(&self, tx: &Tx, ctx: &AppContext<'_>, state: &mut AppOverlay<'_>) -> Result<(), AppError> {
        let kind = ctx.params.hash;
        match Message::decode(&tx.data).map_err(|e| err("vote-malformed", e.to_string()))? {
            Message::Election(e) => {
                let id = e.id(kind);
                if state.get(&election_key(&id)).is_some() {
                    return Err(state_err(
                        "vote-election-exists",
                        format!("election {id} is already published"),
                    ));
                }
                state.put(&election_key(&id), e.encode());
                Ok(())
            }
            Message::Ballot(b) => {
                let id = b.election.id(kind);
                if state.get(&election_key(&id)).is_none() {
                    return Err(state_err(
                        "vote-unknown-election",
                        format!("election {id} is not published"),
                    ));
                }
                if ctx.height < b.election.start || ctx.height > b.election.end {
                    return Err(state_err(
                        "vote-outside-window",
                        format!(
                            "height {} is outside the voting window, heights {} to {}",
                            ctx.height, b.election.start, b.election.end
                        ),
                    ));
                }
                let key = ballot_key(&id, &b.voter_id(kind));
                if state.get(&key).is_some() {
                    return Err(state_err(
                        "vote-double-vote",
                        format!("voter {} has already voted", b.voter_id(kind)),
                    ));
                }
                let count_key = ballot_count_key(&id);
                let counted = match state.get(&count_key) {
                    None => 0,
                    Some(v) => v.as_slice().try_into().map(u64::from_le_bytes).map_err(|_| {
                        state_err(
                            "vote-bad-state",
                            format!("election {id}: the ballot count is {} bytes, not 8", v.len()),
                        )
                    })?,
                };
                let max = b.election.voters()?;
                if counted >= max {
                    return Err(state_err(
                        "vote-election-full",
                        format!("election {id} holds {counted} ballots, its maximum"),
                    ));
                }
                // The proofs: the batch's verdict, or checked here.
                match ctx.precheck {
                    Precheck::Passed => {}
                    Precheck::Failed(e) => return Err(e.clone()),
                    Precheck::None => {
                        // The token and signature passed `check_stateless`.
                        let key = b.election.check()?;
                        let ballot = decode_for(&key, &b)?;
                        check_ballot_proofs(kind, &b, &CheckedBallot { key, ballot })?;
                    }
                }
                state.put(&key, b.ballot);
                state.put(&count_key, (counted + 1).to_le_bytes().to_vec());
                Ok(())
            }
        }
    }

    fn conflict_keys(&self, tx: &Tx, params: &Params) -> Vec<Hash> {
        let kind = params.hash;
        match Message::decode(&tx.data) {
            Ok(Message::Election(e)) => vec![election_conflict_key(kind, &e.id(kind))],
            Ok(Message::Ballot(b)) => {
                vec![ballot_conflict_key(kind, &b.election.id(kind), &b.voter_id(kind))]
            }
            Err(_) => Vec::new(),
        }
    }

    fn last_height(&self, tx: &Tx, _: &Params) -> Option<u64> {
        match Message::decode(&tx.data) {
            Ok(Message::Ballot(b)) => Some(b.election.end),
            Ok(Message::Election(_)) | Err(_) => None,
        }
    }

    fn precheck_batch(
        &self,
        txs: &[&Tx],
        params: &Params,
        seed: &[u8; 32],
    ) -> Option<Vec<Result<(), AppError>>> {
        let kind = params.hash;
        let mut rng = ChaCha20Rng::from_seed(*seed);
        let mut out: Vec<Result<(), AppError>> = vec![Ok(()); txs.len()];
        // Ballots grouped by election (one batch equation per election key).
        let mut groups: HashMap<Hash, Group> = HashMap::new();
        for (i, tx) in txs.iter().enumerate() {
            let b = match Message::decode(&tx.data) {
                Ok(Message::Ballot(b)) => b,
                Ok(Message::Election(_)) => continue,
                Err(e) => {
                    out[i] = Err(err("vote-malformed", e.to_string()));
                    continue;
                }
            };
            // These transactions passed `check_stateless` (token and signature included); the
            // key is parsed once per election.
            let id = b.election.id(kind);
            let group = match groups.entry(id) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => match b.election.check() {
                    Ok(key) => v.insert((key, id, usize::from(b.election.candidates), Vec::new())),
                    Err(e) => {
                        out[i] = Err(e);
                        continue;
                    }
                },
            };
            match decode_for(&group.0, &b) {
                Ok(ballot) => group.3.push((i, b.voter_id(kind), ballot)),
                Err(e) => out[i] = Err(e),
            }
        }
        let mut groups: Vec<Group> = groups.into_values().collect();
        groups.sort_by_key(|g| g.3.first().map(|(i, _, _)| *i));
        for (key, id, l, members) in &groups {
            let sts: Vec<Statement<'_>> =
                members.iter().map(|(_, v, _)| Statement { election: &id.0, voter: &v.0 }).collect();
            let verdicts = match key {
                SchemeKey::Elgamal(k) => {
                    let items: Vec<(Statement<'_>, &WireBallot)> = sts
                        .iter()
                        .zip(members)
                        .filter_map(|(st, (_, _, b))| match b {
                            DecodedBallot::Elgamal(w) => Some((*st, &**w)),
                            DecodedBallot::Paillier(_) => None,
                        })
                        .collect();
                    elgamal::verify_wire_ballots(k, &items, *l, &mut rng)
                }
                // Each Paillier ballot by the single check: the batch equation cannot be
                // trusted to agree with it (an authority knowing `N`'s factors can make an
                // error of small order pass it; `docs/VOTING.md`).
                SchemeKey::Paillier(k) => sts
                    .iter()
                    .zip(members)
                    .filter_map(|(st, (_, _, b))| match b {
                        DecodedBallot::Paillier(p) => Some(paillier::verify_ballot(k, st, p, *l)),
                        DecodedBallot::Elgamal(_) => None,
                    })
                    .collect(),
            };
            // A key decodes ballots of its own scheme only, so every member has a verdict.
            for ((i, _, _), v) in members.iter().zip(verdicts) {
                out[*i] = v.map_err(vote_err);
            }
        }
        Some(out)
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
            election_key: elgamal_election_key(
                100,
                &elgamal::PublicKey(curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT),
            ),
            label: b"mayor".to_vec(),
        }
    }

    /// A ballot message for [`election`] (its fields are not valid proofs or signatures).
    fn ballot() -> Message {
        Message::Ballot(CastBallot {
            election: election(),
            voter_key: [5; 32],
            token: [6; 64],
            ballot: vec![1, 2, 3],
            signature: [7; 64],
        })
    }

    #[test]
    fn messages_round_trip_and_refuse_trailing_bytes() {
        let e = Message::Election(election());
        let b = ballot();
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
        let mut long_key = election();
        long_key.election_key = vec![1; MAX_ELECTION_KEY + 1];
        assert!(Message::decode(&Message::Election(long_key).encode()).is_err());
        assert!(election().check().is_ok());
        let mut empty = election();
        empty.start = 30;
        assert_eq!(empty.check().unwrap_err().rule, "vote-bad-election");
        let mut unknown = election();
        unknown.scheme = 7;
        assert_eq!(unknown.check().unwrap_err().rule, "vote-bad-election");
        let mut short = election();
        short.election_key.pop();
        assert_eq!(short.check().unwrap_err().rule, "vote-bad-election");
    }

    #[test]
    fn every_election_key_opens_with_its_voter_count() {
        let e = election();
        assert_eq!(e.voters(), Ok(100));
        assert_eq!(e.election_key.len(), VOTERS_BYTES + 32);
        let mut none = election();
        none.election_key[..VOTERS_BYTES].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(none.check().unwrap_err().rule, "vote-bad-election");
        let mut bare_point = election();
        bare_point.election_key.drain(..VOTERS_BYTES);
        assert_eq!(bare_point.check().unwrap_err().rule, "vote-bad-election", "the point alone");
        let mut short = election();
        short.election_key.truncate(5);
        assert_eq!(short.voters().unwrap_err().rule, "vote-bad-election");
        assert_eq!(short.check().unwrap_err().rule, "vote-bad-election");
        let mut p = election();
        p.scheme = SCHEME_PAILLIER;
        let k = paillier::keygen(2048, &mut rand_chacha::ChaCha20Rng::seed_from_u64(2)).unwrap();
        p.election_key = paillier::ElectionKey { public: k.public().clone(), voters: 7 }.encode();
        assert_eq!((p.voters(), p.check().map(|_| ())), (Ok(7), Ok(())), "paillier's own layout");
    }

    #[test]
    fn a_ballot_ends_with_its_window_and_an_election_never() {
        let params = Params::devnet(HashKind::Sha256, scalechain_consensus::params::SigMode::Ed25519);
        let ballot = ballot();
        assert_eq!(VotingModule.last_height(&ballot.into_tx(), &params), Some(20));
        assert_eq!(VotingModule.last_height(&Message::Election(election()).into_tx(), &params), None);
        let junk = Tx { data: vec![9; 5], ..Message::Election(election()).into_tx() };
        assert_eq!(VotingModule.last_height(&junk, &params), None);
    }

    #[test]
    fn paillier_election_keys_must_be_large_enough_and_hold_the_encoding() {
        use rand_chacha::ChaCha20Rng;
        let small = paillier::keygen(1024, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
        let mut e = election();
        e.scheme = SCHEME_PAILLIER;
        e.election_key = paillier::ElectionKey { public: small.public().clone(), voters: 10 }.encode();
        assert!(e.check().unwrap_err().detail.contains("1024-bit"));
        e.election_key = vec![0; 8];
        assert_eq!(e.check().unwrap_err().rule, "vote-bad-election");
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(m) = Message::decode(&bytes) {
                prop_assert_eq!(m.encode(), bytes);
            }
        }
    }

    /// A Paillier ballot whose proof is off by an element of order 3 (only an election authority
    /// knowing `N`'s factors can build one) passes the batch equation for about a third of the
    /// weight draws; the module's pre-check (batch and parallel modes, and admission) must refuse
    /// it for every draw, as the single check of sequential mode does.
    #[test]
    fn a_paillier_ballot_off_by_an_element_of_order_3_is_refused_whatever_the_seed() {
        use scalechain_consensus::params::SigMode;
        use scalechain_types::{Scheme, SecretKey};

        use crate::paillier::proof::tests::{key_with_order_3, order_3_ballot};

        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let kind = p.hash;
        let (key, t) = key_with_order_3(11, 2048);
        let ea = SecretKey::from_seed(Scheme::Ed25519, [0xea; 32]);
        let e = Election {
            candidates: 3,
            start: 1,
            end: 100,
            scheme: SCHEME_PAILLIER,
            token_key: ea.public().as_bytes().try_into().unwrap(),
            election_key: key.encode(),
            label: b"order 3".to_vec(),
        };
        let id = e.id(kind);
        let cast_by = |i: u8, ballot: paillier::Ballot| -> Tx {
            let voter = SecretKey::from_seed(Scheme::Ed25519, [i; 32]);
            let vk: [u8; 32] = voter.public().as_bytes().try_into().unwrap();
            let mut b = CastBallot {
                election: e.clone(),
                voter_key: vk,
                token: ea.sign(&token_message(kind, &id, &vk)),
                ballot: ballot.encode(key.public.modulus_bytes()).unwrap(),
                signature: [0; 64],
            };
            b.signature = voter.sign(&b.signing_message(kind));
            Message::Ballot(b).into_tx()
        };
        let voter_id = |i: u8| {
            let vk: [u8; 32] =
                SecretKey::from_seed(Scheme::Ed25519, [i; 32]).public().as_bytes().try_into().unwrap();
            kind.hash(&vk)
        };
        let v1 = voter_id(1);
        let bad = cast_by(1, order_3_ballot(&key, &t, &Statement { election: &id.0, voter: &v1.0 }, 5));
        // Beside three honest ballots, so that a batch equation would be taken.
        let mut rng = ChaCha20Rng::seed_from_u64(6);
        let mut txs = vec![bad];
        for i in 2..5u8 {
            let v = voter_id(i);
            let honest =
                paillier::cast(&key, &Statement { election: &id.0, voter: &v.0 }, 2, 3, &mut rng).unwrap();
            txs.push(cast_by(i, honest));
        }
        for t in &txs {
            VotingModule.check_stateless(t, &p).unwrap();
        }
        let refs: Vec<&Tx> = txs.iter().collect();
        for s in 0..24u8 {
            let out = VotingModule.precheck_batch(&refs, &p, &[s; 32]).unwrap();
            assert_eq!(out[0].as_ref().map_err(|e| e.rule), Err("vote-bad-choice-proof"), "seed {s}");
            assert!(out[1..].iter().all(Result::is_ok), "seed {s}: {out:?}");
        }
    }
}
