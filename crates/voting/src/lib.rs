//! Seed 003's voting application on ScaleChain: an election authority publishes an election
//! key, voters cast encrypted ballots with zero-knowledge proofs that they encrypt a valid
//! choice, anyone tallies the ballots homomorphically from chain data, and the authority
//! decrypts the tally with a proof that anyone can check.
//!
//! This crate holds the cryptography, pure and deterministic given its randomness (which comes in
//! as an argument). [`elgamal`] is exponential ElGamal on ristretto255; [`app`] is the
//! application module that puts elections and ballots on the chain.

pub mod app;
pub mod demo;
pub mod elgamal;

/// Why a ballot, a tally or a decryption was refused.
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
    /// The votes are not proven to sum to one.
    #[error("the proof that the ballot holds exactly one vote does not verify")]
    BadSumProof,
    /// The decrypted count is beyond the table's bound.
    #[error("the decrypted count is beyond the bound of the discrete-log table")]
    CountOutOfRange,
    /// The decryption proof does not verify.
    #[error("the proof of correct decryption does not verify")]
    BadDecryptionProof,
}
