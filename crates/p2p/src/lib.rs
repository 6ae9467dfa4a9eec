//! ScaleChain's peer-to-peer protocol.
//!
//! - [`msg`]: the wire messages (gossip topics and payloads, sync requests and responses) in
//!   the chain's canonical codec, and the protocol names that carry the chain id;
//! - [`protocol`]: the peer protocol as one sans-IO state machine (handshake, serving, request
//!   matching, sync, scoring, gossip verdicts, relay), driven by the node and by the simulator;
//! - [`score`]: peer scoring, bans and per-peer rate limits (a manager of the machine);
//! - [`sync`]: headers-first block sync (a manager of the machine);
//! - [`net`]: the libp2p adapter (one task owns the swarm; the node talks to it over channels).
//!
//! Everything but [`net`] is pure: the clock comes in as an argument, outputs are values, and
//! nothing draws a random number.

pub mod msg;
pub mod net;
pub mod protocol;
pub mod score;
pub mod sync;
#[cfg(test)]
mod testing;
