//! Transactions: `{ version, kind, inputs, outputs, data }`.
//!
//! Encoding (all integers little-endian):
//! ```text
//! tx      = version:u32 kind:u8 n_in:u32 txin*n_in n_out:u32 txout*n_out data_len:u32 data
//! txin    = prev_txid:32 prev_index:u32 witness
//! witness = scheme:u8 pubkey:(32 | 33 by scheme) signature:64
//! txout   = value:u64 scheme:u8 pubkey_hash:32
//! ```
//! `txid = H(tx encoded without witnesses)` (each `txin` is then just its outpoint), so a
//! transaction's outpoints cannot be changed by re-signing; `wtxid = H(full encoding)`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::amount::Amount;
use crate::codec::{put_count, put_var_bytes, Decode, DecodeError, Encode, Reader};
use crate::hash::{Hash, HashKind};
use crate::keys::{PubKey, Scheme, SecretKey, Signature};

/// A reference to an output of an earlier transaction.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct OutPoint {
    /// The txid of the transaction that created the output.
    pub txid: Hash,
    /// The output's index in that transaction.
    pub index: u32,
}

impl fmt::Debug for OutPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.txid, self.index)
    }
}

impl fmt::Display for OutPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.txid, self.index)
    }
}

impl Encode for OutPoint {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.txid.0);
        out.extend_from_slice(&self.index.to_le_bytes());
    }
}

impl Decode for OutPoint {
    const MIN_LEN: usize = 36;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(OutPoint { txid: r.hash("outpoint.txid")?, index: r.u32("outpoint.index")? })
    }
}

/// Who may spend an output: the scheme and `H(pubkey)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct Lock {
    /// The scheme the spending key must use.
    pub scheme: Scheme,
    /// `H(pubkey bytes)` under the chain's hash function.
    pub pubkey_hash: Hash,
}

/// A transaction output.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct TxOut {
    /// The amount.
    pub value: Amount,
    /// The spending condition.
    pub lock: Lock,
}

impl TxOut {
    /// Encoded size in bytes.
    pub const LEN: usize = 8 + 1 + 32;
}

fn read_scheme(r: &mut Reader<'_>, field: &'static str) -> Result<Scheme, DecodeError> {
    let b = r.u8(field)?;
    Scheme::from_code(b).ok_or_else(|| r.invalid(field, format!("unknown signature scheme {b}")))
}

impl Encode for TxOut {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.value.get().to_le_bytes());
        out.push(self.lock.scheme.code());
        out.extend_from_slice(&self.lock.pubkey_hash.0);
    }
}

impl Decode for TxOut {
    const MIN_LEN: usize = TxOut::LEN;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let value = r.amount("txout.value")?;
        let scheme = read_scheme(r, "txout.scheme")?;
        let pubkey_hash = r.hash("txout.pubkey_hash")?;
        Ok(TxOut { value, lock: Lock { scheme, pubkey_hash } })
    }
}

/// The proof that an input may spend its output: the key and its signature over the sighash.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Witness {
    /// The public key (its scheme is the witness's scheme).
    pub pubkey: PubKey,
    /// The signature over the transaction's sighash.
    pub signature: Signature,
}

impl fmt::Debug for Witness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Witness({:?}, sig {})", self.pubkey, hex::encode(self.signature))
    }
}

impl Encode for Witness {
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.pubkey.scheme().code());
        out.extend_from_slice(self.pubkey.as_bytes());
        out.extend_from_slice(&self.signature);
    }
}

impl Decode for Witness {
    const MIN_LEN: usize = 1 + 32 + 64;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let scheme = read_scheme(r, "witness.scheme")?;
        let key = r.bytes("witness.pubkey", scheme.pubkey_len())?;
        let pubkey = PubKey::from_slice(scheme, key).expect("length taken from the scheme");
        let signature = r.array("witness.signature")?;
        Ok(Witness { pubkey, signature })
    }
}

/// A transaction input.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TxIn {
    /// The output it spends.
    pub prev: OutPoint,
    /// Key and signature.
    pub witness: Witness,
}

impl Encode for TxIn {
    fn encode_to(&self, out: &mut Vec<u8>) {
        self.prev.encode_to(out);
        self.witness.encode_to(out);
    }
}

impl Decode for TxIn {
    const MIN_LEN: usize = OutPoint::MIN_LEN + Witness::MIN_LEN;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(TxIn { prev: OutPoint::decode_from(r)?, witness: Witness::decode_from(r)? })
    }
}

/// A transaction's kind. `0` is the coinbase, `1` a transfer; every other value is an
/// application kind whose `data` the registered application module validates.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TxKind(pub u8);

impl TxKind {
    /// The block reward: first transaction of a block, no inputs, `data` = height (u64 LE).
    pub const COINBASE: TxKind = TxKind(0);
    /// A plain transfer: at least one input and one output.
    pub const TRANSFER: TxKind = TxKind(1);

    /// The name used in JSON and messages: `coinbase`, `transfer` or `app:<n>`.
    pub fn name(self) -> String {
        match self {
            TxKind::COINBASE => "coinbase".into(),
            TxKind::TRANSFER => "transfer".into(),
            TxKind(n) => format!("app:{n}"),
        }
    }

    /// Parses a name produced by [`TxKind::name`].
    pub fn from_name(s: &str) -> Option<TxKind> {
        match s {
            "coinbase" => Some(TxKind::COINBASE),
            "transfer" => Some(TxKind::TRANSFER),
            _ => s.strip_prefix("app:")?.parse().ok().filter(|n| *n > 1).map(TxKind),
        }
    }
}

/// A transaction.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Tx {
    /// Format version (currently 1).
    pub version: u32,
    /// What kind of transaction this is.
    pub kind: TxKind,
    /// Inputs.
    pub inputs: Vec<TxIn>,
    /// Outputs.
    pub outputs: Vec<TxOut>,
    /// Kind-specific data: the height for a coinbase, application payload for app kinds.
    pub data: Vec<u8>,
}

impl Tx {
    /// The smallest possible encoding: no inputs, no outputs, no data.
    pub const MIN_LEN: usize = 4 + 1 + 4 + 4 + 4;

    fn encode_parts(&self, out: &mut Vec<u8>, witnesses: bool) {
        out.extend_from_slice(&self.version.to_le_bytes());
        out.push(self.kind.0);
        put_count(out, self.inputs.len());
        for i in &self.inputs {
            i.prev.encode_to(out);
            if witnesses {
                i.witness.encode_to(out);
            }
        }
        put_count(out, self.outputs.len());
        for o in &self.outputs {
            o.encode_to(out);
        }
        put_var_bytes(out, &self.data);
    }

    /// The encoding without witnesses (what the txid commits to).
    pub fn encode_without_witnesses(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_parts(&mut out, false);
        out
    }

    /// Length of the full encoding, computed without encoding.
    pub fn encoded_len(&self) -> usize {
        let ins: usize =
            self.inputs.iter().map(|i| 36 + 1 + i.witness.pubkey.scheme().pubkey_len() + 64).sum();
        Self::MIN_LEN + ins + self.outputs.len() * TxOut::LEN + self.data.len()
    }

    /// `H(encoding without witnesses)`.
    pub fn txid(&self, kind: HashKind) -> Hash {
        kind.hash(&self.encode_without_witnesses())
    }

    /// `H(full encoding)`.
    pub fn wtxid(&self, kind: HashKind) -> Hash {
        kind.hash(&self.encode())
    }

    /// Signs every input. All inputs sign one message, `sighash(chain_id, txid)` (the txid
    /// leaves witnesses out, so signing does not change it); `sign(i, &msg)` gives input `i`'s
    /// signature, and its first error stops the signing and is returned.
    pub fn sign_inputs<E>(
        &mut self,
        kind: HashKind,
        chain_id: &Hash,
        mut sign: impl FnMut(usize, &Hash) -> Result<Signature, E>,
    ) -> Result<(), E> {
        let msg = crate::keys::sighash(kind, chain_id, &self.txid(kind));
        for (i, input) in self.inputs.iter_mut().enumerate() {
            input.witness.signature = sign(i, &msg)?;
        }
        Ok(())
    }

    /// Signs every input with `key` ([`Tx::sign_inputs`] for a transaction whose inputs all
    /// spend coins of one key).
    pub fn sign_inputs_with(&mut self, kind: HashKind, chain_id: &Hash, key: &SecretKey) {
        let Ok(()) = self.sign_inputs::<std::convert::Infallible>(kind, chain_id, |_, m| Ok(key.sign(m)));
    }

    /// Is this a coinbase?
    pub fn is_coinbase(&self) -> bool {
        self.kind == TxKind::COINBASE
    }

    /// A coinbase transaction for `height` paying `outputs`.
    pub fn coinbase(height: u64, outputs: Vec<TxOut>) -> Tx {
        Tx {
            version: 1,
            kind: TxKind::COINBASE,
            inputs: vec![],
            outputs,
            data: height.to_le_bytes().to_vec(),
        }
    }
}

impl Encode for Tx {
    fn encode_to(&self, out: &mut Vec<u8>) {
        self.encode_parts(out, true);
    }
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_to(&mut out);
        out
    }
}

impl Decode for Tx {
    const MIN_LEN: usize = Tx::MIN_LEN;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let version = r.u32("tx.version")?;
        let kind = TxKind(r.u8("tx.kind")?);
        let inputs = r.vec("tx.inputs")?;
        let outputs = r.vec("tx.outputs")?;
        let data = r.var_bytes("tx.data")?;
        Ok(Tx { version, kind, inputs, outputs, data })
    }
}

/// Encodes transactions as one transaction batch (PROTOCOL.md §13.2: `count:u32 LE ‖ tx *
/// count`), the payload of a gossip message and a binary `POST /txs` body.
pub fn encode_tx_batch<'a>(txs: impl ExactSizeIterator<Item = &'a Tx>) -> Vec<u8> {
    let mut out = Vec::new();
    put_count(&mut out, txs.len());
    for t in txs {
        t.encode_to(&mut out);
    }
    out
}

/// Decodes a transaction batch of at most `max_txs` transactions: the count is checked before
/// anything is allocated, and trailing bytes are refused.
pub fn decode_tx_batch(data: &[u8], max_txs: usize) -> Result<Vec<Tx>, DecodeError> {
    let mut r = Reader::new(data);
    let n = r.count("tx_batch", Tx::MIN_LEN)?;
    if n > max_txs {
        return Err(r.invalid("tx_batch", format!("{n} transactions, at most {max_txs}")));
    }
    let mut txs = Vec::with_capacity(n);
    for _ in 0..n {
        txs.push(Tx::decode_from(&mut r)?);
    }
    r.finish()?;
    Ok(txs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::keys::{sighash, verify};

    fn two_input_tx(keys: &[SecretKey; 2]) -> Tx {
        let input = |i: u8, k: &SecretKey| TxIn {
            prev: OutPoint { txid: Hash([i; 32]), index: 0 },
            witness: Witness { pubkey: k.public(), signature: [0; 64] },
        };
        Tx {
            version: 1,
            kind: TxKind::TRANSFER,
            inputs: vec![input(1, &keys[0]), input(2, &keys[1])],
            outputs: vec![],
            data: vec![],
        }
    }

    #[test]
    fn every_input_signs_the_sighash_and_a_failing_signer_stops() {
        let keys = [
            SecretKey::from_seed(Scheme::Ed25519, [7; 32]),
            SecretKey::from_seed(Scheme::Secp256k1, [8; 32]),
        ];
        let (kind, chain) = (HashKind::Sha256, Hash([9; 32]));
        let mut tx = two_input_tx(&keys);
        let txid = tx.txid(kind);
        tx.sign_inputs::<()>(kind, &chain, |i, m| Ok(keys[i].sign(m))).unwrap();
        assert_eq!(tx.txid(kind), txid, "witnesses are outside the txid");
        let msg = sighash(kind, &chain, &txid);
        for i in &tx.inputs {
            verify(&i.witness.pubkey, &msg, &i.witness.signature).unwrap();
        }
        // One key for every input.
        let mut one = two_input_tx(&[keys[0].clone(), keys[0].clone()]);
        one.sign_inputs_with(kind, &chain, &keys[0]);
        assert!(one.inputs.iter().all(|i| verify(&i.witness.pubkey, &msg, &i.witness.signature).is_ok()));
        // The signer's error is returned at the first input it refuses; later ones stay unsigned.
        let mut tx = two_input_tx(&keys);
        let e = tx.sign_inputs(kind, &chain, |i, m| if i == 0 { Ok(keys[0].sign(m)) } else { Err(i) });
        assert_eq!(e, Err(1));
        assert_eq!(tx.inputs[1].witness.signature, [0; 64]);
    }
}
