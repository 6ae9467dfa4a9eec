//! Block headers and blocks.
//!
//! ```text
//! header = version:u32 height:u64 prev_hash:32 merkle_root:32 time:u64 target:32 nonce:u64   (124 bytes)
//! block  = header n_tx:u32 tx*n_tx
//! ```
//! The block hash is `H(header)`. Proof of work holds when that digest, read as a big-endian
//! 256-bit integer, is at most `target` (also big-endian). `time` is milliseconds since the Unix
//! epoch. The Merkle root is RFC 6962 over the full encodings of the transactions.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::codec::{put_count, Decode, DecodeError, Encode, Reader};
use crate::hash::{Hash, HashKind};
use crate::merkle;
use crate::tx::Tx;

/// Encoded header length in bytes.
pub const HEADER_LEN: usize = 4 + 8 + 32 + 32 + 8 + 32 + 8;

/// A proof-of-work target: a 256-bit unsigned integer, big-endian.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
pub struct Target(pub Hash);

impl Target {
    /// Does `hash` (read big-endian) meet this target?
    pub fn is_met_by(&self, hash: &Hash) -> bool {
        // Lexicographic order of big-endian byte strings is numeric order.
        hash.0 <= self.0 .0
    }

    /// The target `2^bits - 1`: a hash meets it with probability about 2^(bits-256).
    pub fn from_bits(bits: u32) -> Target {
        let mut t = [0u8; 32];
        let bits = bits.min(256) as usize;
        for (i, byte) in t.iter_mut().enumerate() {
            let bit_lo = (31 - i) * 8; // value of this byte's lowest bit
            if bits >= bit_lo + 8 {
                *byte = 0xff;
            } else if bits > bit_lo {
                *byte = (1u16 << (bits - bit_lo)) as u8 - 1;
            }
        }
        Target(Hash(t))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Target({})", self.0)
    }
}

/// A block header.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Header {
    /// Format version (currently 1).
    pub version: u32,
    /// Height: genesis is 0, each block its parent's height + 1.
    pub height: u64,
    /// Hash of the parent header (zero for genesis).
    pub prev_hash: Hash,
    /// RFC 6962 root over the block's transactions.
    pub merkle_root: Hash,
    /// Milliseconds since the Unix epoch.
    pub time: u64,
    /// The proof-of-work target this block must meet.
    pub target: Target,
    /// Free field for mining.
    pub nonce: u64,
}

impl Header {
    /// `H(header encoding)`.
    pub fn hash(&self, kind: HashKind) -> Hash {
        let mut buf = [0u8; HEADER_LEN];
        self.write(&mut buf);
        kind.hash(&buf)
    }

    /// Writes the 124-byte encoding.
    pub fn write(&self, buf: &mut [u8; HEADER_LEN]) {
        buf[0..4].copy_from_slice(&self.version.to_le_bytes());
        buf[4..12].copy_from_slice(&self.height.to_le_bytes());
        buf[12..44].copy_from_slice(&self.prev_hash.0);
        buf[44..76].copy_from_slice(&self.merkle_root.0);
        buf[76..84].copy_from_slice(&self.time.to_le_bytes());
        buf[84..116].copy_from_slice(&self.target.0 .0);
        buf[116..124].copy_from_slice(&self.nonce.to_le_bytes());
    }
}

impl Encode for Header {
    fn encode_to(&self, out: &mut Vec<u8>) {
        let mut buf = [0u8; HEADER_LEN];
        self.write(&mut buf);
        out.extend_from_slice(&buf);
    }
}

impl Decode for Header {
    const MIN_LEN: usize = HEADER_LEN;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Header {
            version: r.u32("header.version")?,
            height: r.u64("header.height")?,
            prev_hash: r.hash("header.prev_hash")?,
            merkle_root: r.hash("header.merkle_root")?,
            time: r.u64("header.time")?,
            target: Target(r.hash("header.target")?),
            nonce: r.u64("header.nonce")?,
        })
    }
}

/// A block: a header and its transactions (the coinbase first).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Block {
    /// The header.
    pub header: Header,
    /// The transactions.
    pub txs: Vec<Tx>,
}

impl Block {
    /// The block hash.
    pub fn hash(&self, kind: HashKind) -> Hash {
        self.header.hash(kind)
    }

    /// The RFC 6962 root over the transactions' full encodings (leaves hashed in parallel).
    pub fn compute_merkle_root(&self, kind: HashKind) -> Hash {
        merkle::root_of_txs(kind, &self.txs)
    }

    /// Encoded length.
    pub fn encoded_len(&self) -> usize {
        HEADER_LEN + 4 + self.txs.iter().map(Tx::encoded_len).sum::<usize>()
    }
}

impl Encode for Block {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        self.header.encode_to(out);
        put_count(out, self.txs.len());
        for tx in &self.txs {
            tx.encode_to(out);
        }
    }
}

impl Decode for Block {
    const MIN_LEN: usize = HEADER_LEN + 4;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let header = Header::decode_from(r)?;
        let txs = r.vec("block.txs")?;
        Ok(Block { header, txs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_from_bits() {
        assert_eq!(Target::from_bits(0).0, Hash::ZERO);
        assert_eq!(Target::from_bits(256).0, Hash([0xff; 32]));
        let t = Target::from_bits(244);
        assert_eq!(t.0 .0[0], 0x00);
        assert_eq!(t.0 .0[1], 0x0f);
        assert_eq!(t.0 .0[2], 0xff);
        let mut h = [0xff; 32];
        h[0] = 0;
        h[1] = 0x0f;
        assert!(t.is_met_by(&Hash(h)));
        h[1] = 0x10;
        assert!(!t.is_met_by(&Hash(h)));
    }
}
