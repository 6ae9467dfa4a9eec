//! The canonical binary encoding: sans-IO, bounded, strict.
//!
//! Integers are little-endian and fixed-width. A vector is a `u32` count followed by its
//! elements; before anything is allocated the count is checked against the bytes that remain
//! (count × the element's minimum encoded size must fit), so a forged count cannot make the
//! decoder allocate more than its input justifies. [`Decode::decode`] rejects trailing bytes.
//! Hashing always covers these bytes: serde/JSON is for people and is never hashed.

use std::fmt;

use crate::amount::Amount;
use crate::hash::Hash;

/// A value with a canonical encoding.
pub trait Encode {
    /// Appends the encoding to `out`.
    fn encode_to(&self, out: &mut Vec<u8>);

    /// The encoding as a new vector.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }
}

/// A value that can be decoded from its canonical encoding.
pub trait Decode: Sized {
    /// The fewest bytes any value of this type encodes to (used to bound vector counts).
    const MIN_LEN: usize;

    /// Reads one value from the reader.
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError>;

    /// Decodes exactly one value from `bytes`, rejecting trailing bytes.
    fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let v = Self::decode_from(&mut r)?;
        r.finish()?;
        Ok(v)
    }
}

/// What was wrong with the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The input ended early.
    UnexpectedEnd {
        /// Bytes the field needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// Bytes were left after the value.
    TrailingBytes(usize),
    /// A vector's count cannot fit in the bytes that remain.
    LengthTooLarge {
        /// The count read.
        count: u64,
        /// The most that could fit.
        max: u64,
    },
    /// A field holds a value outside its domain.
    InvalidValue(String),
}

/// A decoding failure: what went wrong, in which field, at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError {
    /// The field being read (e.g. `tx.inputs`).
    pub field: &'static str,
    /// Byte offset in the input where the field starts.
    pub offset: usize,
    /// The failure.
    pub kind: DecodeErrorKind,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "decoding {} at byte {}: ", self.field, self.offset)?;
        match &self.kind {
            DecodeErrorKind::UnexpectedEnd { needed, available } => {
                write!(f, "input ends early (need {needed} bytes, {available} left)")
            }
            DecodeErrorKind::TrailingBytes(n) => write!(f, "{n} trailing bytes"),
            DecodeErrorKind::LengthTooLarge { count, max } => {
                write!(f, "count {count} cannot fit in the remaining input (at most {max})")
            }
            DecodeErrorKind::InvalidValue(s) => f.write_str(s),
        }
    }
}

/// A cursor over input bytes.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// The current offset.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An error at the current offset.
    pub fn error(&self, field: &'static str, kind: DecodeErrorKind) -> DecodeError {
        DecodeError { field, offset: self.pos, kind }
    }

    /// An [`DecodeErrorKind::InvalidValue`] error at the current offset.
    pub fn invalid(&self, field: &'static str, msg: impl Into<String>) -> DecodeError {
        self.error(field, DecodeErrorKind::InvalidValue(msg.into()))
    }

    /// Takes `n` bytes.
    pub fn bytes(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(
                self.error(field, DecodeErrorKind::UnexpectedEnd { needed: n, available: self.remaining() })
            );
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Takes a fixed-size array.
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(field, N)?);
        Ok(out)
    }

    /// Reads a `u8`.
    pub fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(field)?[0])
    }

    /// Reads a little-endian `u32`.
    pub fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    /// Reads a little-endian `u64`.
    pub fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    /// Reads a hash.
    pub fn hash(&mut self, field: &'static str) -> Result<Hash, DecodeError> {
        Ok(Hash(self.array(field)?))
    }

    /// Reads an amount (a `u64` that must not exceed 2^53 − 1).
    pub fn amount(&mut self, field: &'static str) -> Result<Amount, DecodeError> {
        let start = self.pos;
        let v = self.u64(field)?;
        Amount::new(v).map_err(|e| DecodeError {
            field,
            offset: start,
            kind: DecodeErrorKind::InvalidValue(e.to_string()),
        })
    }

    /// Reads a vector count and checks that `count × min_elem_len` bytes remain.
    pub fn count(&mut self, field: &'static str, min_elem_len: usize) -> Result<usize, DecodeError> {
        let start = self.pos;
        let count = self.u32(field)? as usize;
        let max = self.remaining() / min_elem_len.max(1);
        if count > max {
            return Err(DecodeError {
                field,
                offset: start,
                kind: DecodeErrorKind::LengthTooLarge { count: count as u64, max: max as u64 },
            });
        }
        Ok(count)
    }

    /// Reads a `u32`-length-prefixed byte string.
    pub fn var_bytes(&mut self, field: &'static str) -> Result<Vec<u8>, DecodeError> {
        let n = self.count(field, 1)?;
        Ok(self.bytes(field, n)?.to_vec())
    }

    /// Reads a `u32`-counted vector of `T`.
    pub fn vec<T: Decode>(&mut self, field: &'static str) -> Result<Vec<T>, DecodeError> {
        let n = self.count(field, T::MIN_LEN)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::decode_from(self)?);
        }
        Ok(v)
    }

    /// Fails if any bytes are left.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(self.error("end", DecodeErrorKind::TrailingBytes(n))),
        }
    }
}

/// Appends a little-endian `u32` vector count.
///
/// # Panics
/// If `n` exceeds `u32::MAX`: no encodable value is that large (blocks are bounded far below it).
pub fn put_count(out: &mut Vec<u8>, n: usize) {
    let n = u32::try_from(n).expect("vector counts are bounded far below u32::MAX by the chain's limits");
    out.extend_from_slice(&n.to_le_bytes());
}

/// Appends a `u32`-length-prefixed byte string.
pub fn put_var_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_count(out, b.len());
    out.extend_from_slice(b);
}

impl Encode for Hash {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

impl Decode for Hash {
    const MIN_LEN: usize = 32;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        r.hash("hash")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_is_bounded_by_remaining_input() {
        let mut bytes = u32::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0; 64]);
        let err = Reader::new(&bytes).vec::<Hash>("hashes").unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::LengthTooLarge { count: u32::MAX as u64, max: 2 });
        assert_eq!(err.offset, 0);
    }

    #[test]
    fn trailing_bytes_and_short_input() {
        assert!(matches!(Hash::decode(&[0; 33]).unwrap_err().kind, DecodeErrorKind::TrailingBytes(1)));
        assert!(matches!(
            Hash::decode(&[0; 31]).unwrap_err().kind,
            DecodeErrorKind::UnexpectedEnd { needed: 32, available: 31 }
        ));
    }

    #[test]
    fn amount_above_max_is_rejected() {
        let bytes = (1u64 << 53).to_le_bytes();
        let err = Reader::new(&bytes).amount("value").unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::InvalidValue(_)));
    }
}
