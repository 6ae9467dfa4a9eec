//! ScaleChain's peer-to-peer protocol.
//!
//! - [`msg`]: the wire messages (gossip payloads, sync requests and responses) in the chain's
//!   canonical codec, and the protocol names that carry the chain id;
//! - [`score`]: peer scoring, bans and per-peer rate limits;
//! - [`sync`]: headers-first block sync as a state machine;
//! - [`net`]: the libp2p adapter (one task owns the swarm; the node talks to it over channels).
//!
//! Everything but [`net`] is pure: the clock comes in as an argument, outputs are values.

pub mod msg;
pub mod net;
pub mod score;
pub mod sync;
