//! Seed 003's voting application on ScaleChain: an election authority publishes an election
//! key, voters cast encrypted ballots with zero-knowledge proofs that they encrypt a valid
//! choice, anyone tallies the ballots homomorphically from chain data, and the authority
//! decrypts the tally with a proof that anyone can check.
//!
//! This crate holds the cryptography, pure and deterministic given its randomness (which comes in
//! as an argument). Two ballot schemes ([`BallotScheme`]):
//! - [`elgamal`]: exponential ElGamal on ristretto255, one ciphertext per candidate;
//! - [`paillier`]: seed 003's own scheme, one Paillier ciphertext per ballot (2048-bit `N`,
//!   `g = N + 1`, candidate `i` encoded as `2^(i·b)`), with the 1-out-of-L membership proof of
//!   Baudron et al., keys and ciphertexts interoperable with python-paillier (`phe`).
//!
//! [`app`] is the application module that puts elections and ballots on the chain (with a batch
//! pre-check of ballot proofs for block validation); [`demo`] runs a whole election; [`tally`]
//! holds the EA's key file, the tally of stored ballots with its result file, and anyone's
//! verification of it (the library side of `scalechain vote election|register|tally|verify`);
//! [`booth`] the files of the browser booth: voter packages and ballot audits.

pub mod app;
pub mod booth;
pub mod demo;
pub mod elgamal;
pub mod paillier;
pub mod tally;

/// What a ballot's proofs are bound to (both schemes): the election and the voter. A proof made
/// for one voter or election does not verify for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statement<'a> {
    /// The election's id.
    pub election: &'a [u8; 32],
    /// Hash of the voter's public key (the ballot's storage key).
    pub voter: &'a [u8; 32],
}

/// The ballot schemes an election may use (its descriptor's `scheme` byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BallotScheme {
    /// Exponential ElGamal on ristretto255 ([`elgamal`]).
    #[default]
    Elgamal,
    /// Paillier with the 1-out-of-L membership proof ([`paillier`]).
    Paillier,
}

impl BallotScheme {
    /// Every scheme.
    pub const ALL: [BallotScheme; 2] = [BallotScheme::Elgamal, BallotScheme::Paillier];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            BallotScheme::Elgamal => "elgamal",
            BallotScheme::Paillier => "paillier",
        }
    }

    /// The election descriptor's scheme byte.
    pub fn byte(self) -> u8 {
        match self {
            BallotScheme::Elgamal => app::SCHEME_ELGAMAL,
            BallotScheme::Paillier => app::SCHEME_PAILLIER,
        }
    }

    /// The scheme of a descriptor's scheme byte, if known.
    pub fn from_byte(b: u8) -> Option<BallotScheme> {
        BallotScheme::ALL.into_iter().find(|s| s.byte() == b)
    }
}

impl std::fmt::Display for BallotScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BallotScheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BallotScheme::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown ballot scheme {s:?} (expected elgamal or paillier)"))
    }
}

/// Why a ballot, a key, a tally or a decryption was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VoteError {
    /// The election has no candidates or too many.
    #[error("{got} candidates; an election has 1 to {max}")]
    CandidateCount {
        /// Candidates asked for.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// The chosen candidate does not exist.
    #[error("choice {choice} is not one of the {candidates} candidates")]
    ChoiceOutOfRange {
        /// The choice.
        choice: usize,
        /// Number of candidates.
        candidates: usize,
    },
    /// The ballot does not have one ciphertext and one proof per candidate.
    #[error("ballot has {got} entries; the election has {expected} candidates")]
    WrongLength {
        /// Candidates of the election.
        expected: usize,
        /// Entries in the ballot.
        got: usize,
    },
    /// A candidate's ciphertext is not proven to encrypt 0 or 1 (for this election and voter).
    #[error("candidate {candidate}: the proof that the vote is 0 or 1 does not verify")]
    BadBitProof {
        /// The candidate.
        candidate: usize,
    },
    /// An audited ballot's ciphertext does not open, with the revealed randomness, to the vote
    /// the shown choice gives it.
    #[error(
        "candidate {candidate}'s ciphertext does not open to the audited choice {choice} with the \
         revealed randomness"
    )]
    NotOpened {
        /// The candidate whose ciphertext does not open.
        candidate: usize,
        /// The choice shown.
        choice: usize,
    },
    /// The votes are not proven to sum to one.
    #[error("the proof that the ballot holds exactly one vote does not verify")]
    BadSumProof,
    /// A Paillier ballot's 1-out-of-L proof does not verify: the ciphertext is not proven to
    /// encrypt one candidate's encoding (for this election and voter).
    #[error("the proof that the ciphertext encrypts one candidate does not verify")]
    BadMembershipProof,
    /// A Paillier ciphertext is not in `Z*_{N²}` (zero, not below `N²`, or sharing a factor
    /// with `N`).
    #[error("the ciphertext is not in Z*_(N^2)")]
    CiphertextNotUnit,
    /// A Paillier key is unusable (its modulus size or shape, or the candidate encoding does not
    /// fit it).
    #[error("bad key: {0}")]
    BadKey(String),
    /// More ballots than the election's encoding can count without overflow.
    #[error("{ballots} ballots; the encoding counts at most {max}")]
    TooManyBallots {
        /// Ballots tallied.
        ballots: u64,
        /// The most the encoding holds per candidate.
        max: u64,
    },
    /// The decrypted count is beyond the table's bound.
    #[error("the decrypted count is beyond the bound of the discrete-log table")]
    CountOutOfRange,
    /// The decryption proof does not verify.
    #[error("the proof of correct decryption does not verify")]
    BadDecryptionProof,
    /// A big-number operation failed inside OpenSSL (allocation failure; never expected).
    #[error("big-number arithmetic failed: {0}")]
    Arithmetic(String),
}

impl From<openssl::error::ErrorStack> for VoteError {
    fn from(e: openssl::error::ErrorStack) -> Self {
        VoteError::Arithmetic(e.to_string())
    }
}
