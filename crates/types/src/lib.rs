//! ScaleChain's data types and their one canonical binary encoding.
//!
//! This crate is the bottom of the crate graph: it depends on no other ScaleChain crate.
//!
//! What it holds:
//! - [`Hash`] and the chain's pluggable hash function [`HashKind`] (`sha256`, `sha512_256`, `blake3`);
//! - [`Amount`], a newtype whose arithmetic is checked and which never exceeds 2^53 − 1, and
//!   [`FeeRate`], a fee over a size compared exactly;
//! - transactions ([`Tx`], [`TxIn`], [`TxOut`], [`OutPoint`]) and blocks ([`Header`], [`Block`]);
//! - the canonical codec ([`Encode`], [`Decode`]): little-endian fixed-width integers,
//!   `u32`-length-prefixed vectors whose length is bounded by the bytes left before anything is
//!   allocated, and no trailing bytes;
//! - keys and signatures for the two schemes ([`keys`]): Ed25519 under ZIP-215 rules and
//!   secp256k1 ECDSA with low-S compact signatures, and a cache of decompressed Ed25519 keys
//!   that batches share ([`keycache`]);
//! - RFC 6962 Merkle trees with inclusion proofs ([`merkle`]).
//!
//! Invariants: decoding never panics and never allocates more than a small multiple of its input;
//! every value a decoder returns re-encodes to exactly the bytes it came from.
//!
//! What it must not do: IO, async, clocks or randomness of its own (key generation takes seeds).
//! Its one piece of process-wide state is the key cache, a memo that never changes a verdict.
//! Consensus rules live in `scalechain-consensus`; this crate only says what bytes mean.

pub mod amount;
pub mod block;
pub mod codec;
pub mod fee;
pub mod hash;
pub mod keycache;
pub mod keys;
pub mod merkle;
pub mod profile;
pub mod seqlog;
pub mod tx;

pub use amount::{Amount, AmountError, Coins};
pub use block::{Block, Header, Target, HEADER_LEN};
pub use codec::{Decode, DecodeError, DecodeErrorKind, Encode, Reader};
pub use fee::FeeRate;
pub use hash::{Hash, HashKind, Hasher};
pub use keys::{PubKey, Scheme, SecretKey, SigError, Signature};
pub use tx::{Lock, OutPoint, Tx, TxIn, TxKind, TxOut, Witness};
