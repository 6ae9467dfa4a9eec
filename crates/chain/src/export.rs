//! The JSON and DOT pictures of a chain, and reading the JSON back.
//!
//! JSON (for people and other tools; never hashed): `params` (every chain parameter plus
//! `chain_id`) and `blocks`, genesis first, each with `hash`, `raw` (hex of the canonical header
//! encoding), `header` and `txs`; each transaction with `txid`, `wtxid`, `kind`, `data`, `raw`
//! (hex of its full canonical encoding), `inputs` and `outputs`. `raw` is authoritative: a
//! reader decodes it and refuses a document whose other fields disagree with it.
//!
//! DOT (Graphviz): seed 000's Appendix A picture — each block a box (cluster) holding its
//! transactions as ovals, black arrows from a spending transaction to the transaction whose
//! output it spends (labelled with the output index), green arrows linking successive blocks.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use scalechain_consensus::Params;
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::{Amount, Block, Hash, HashKind, Header, Scheme, Target, Tx, TxKind};

/// The parameters as exported: every field, plus the chain id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamsJson {
    /// The chain id (genesis block hash).
    pub chain_id: Hash,
    /// Every parameter.
    #[serde(flatten)]
    pub params: Params,
}

/// A header as exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HeaderJson {
    /// Version.
    pub version: u32,
    /// Height.
    pub height: u64,
    /// Parent hash.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub prev_hash: Hash,
    /// Merkle root.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub merkle_root: Hash,
    /// Time, ms since the Unix epoch.
    pub time: u64,
    /// Target, 64 hex digits, big-endian.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub target: Target,
    /// Nonce.
    pub nonce: u64,
}

/// An input as exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct InputJson {
    /// Txid of the spent output.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub txid: Hash,
    /// Its index.
    pub index: u32,
    /// Signature scheme.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "ed25519"))]
    pub scheme: Scheme,
    /// Public key, hex.
    pub pubkey: String,
    /// Signature, hex.
    pub signature: String,
}

/// An output as exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OutputJson {
    /// Value (a JSON integer).
    #[cfg_attr(feature = "openapi", schema(value_type = u64))]
    pub value: Amount,
    /// Scheme of the lock.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "ed25519"))]
    pub scheme: Scheme,
    /// `H(pubkey)`.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub pubkey_hash: Hash,
}

/// A transaction as exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TxJson {
    /// Txid.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub txid: Hash,
    /// Wtxid.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub wtxid: Hash,
    /// `coinbase`, `transfer` or `app:<n>`.
    pub kind: String,
    /// Data, hex.
    pub data: String,
    /// Full canonical encoding, hex (authoritative).
    pub raw: String,
    /// Inputs.
    pub inputs: Vec<InputJson>,
    /// Outputs.
    pub outputs: Vec<OutputJson>,
}

/// A block as exported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BlockJson {
    /// Block hash.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-f]{64}$"))]
    pub hash: Hash,
    /// Canonical header encoding, hex (authoritative).
    pub raw: String,
    /// Header fields.
    pub header: HeaderJson,
    /// Transactions.
    pub txs: Vec<TxJson>,
}

/// A whole exported chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainJson {
    /// Parameters.
    pub params: ParamsJson,
    /// Blocks, genesis first.
    pub blocks: Vec<BlockJson>,
}

/// The JSON form of a transaction.
pub fn tx_json(kind: HashKind, tx: &Tx) -> TxJson {
    TxJson {
        txid: tx.txid(kind),
        wtxid: tx.wtxid(kind),
        kind: tx.kind.name(),
        data: hex::encode(&tx.data),
        raw: hex::encode(tx.encode()),
        inputs: tx
            .inputs
            .iter()
            .map(|i| InputJson {
                txid: i.prev.txid,
                index: i.prev.index,
                scheme: i.witness.pubkey.scheme(),
                pubkey: hex::encode(i.witness.pubkey.as_bytes()),
                signature: hex::encode(i.witness.signature),
            })
            .collect(),
        outputs: tx
            .outputs
            .iter()
            .map(|o| OutputJson { value: o.value, scheme: o.lock.scheme, pubkey_hash: o.lock.pubkey_hash })
            .collect(),
    }
}

/// The JSON form of a block.
pub fn block_json(kind: HashKind, b: &Block) -> BlockJson {
    let h = &b.header;
    BlockJson {
        hash: b.hash(kind),
        raw: hex::encode(h.encode()),
        header: HeaderJson {
            version: h.version,
            height: h.height,
            prev_hash: h.prev_hash,
            merkle_root: h.merkle_root,
            time: h.time,
            target: h.target,
            nonce: h.nonce,
        },
        txs: b.txs.iter().map(|t| tx_json(kind, t)).collect(),
    }
}

/// Why a JSON document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// Not JSON of the expected shape.
    #[error("not a ScaleChain export: {0}")]
    Format(String),
    /// The parameters do not produce the chain id the document states.
    #[error("params: chain_id {stated} is not the genesis hash {computed} of these parameters")]
    ChainId {
        /// Stated.
        stated: Hash,
        /// Computed from the parameters.
        computed: Hash,
    },
    /// The first block is not the genesis of these parameters.
    #[error("block 0 {hash}: not the genesis block of these parameters")]
    Genesis {
        /// Hash stated for block 0.
        hash: Hash,
    },
    /// A `raw` field does not decode.
    #[error("block {index} {hash}: {what}: raw does not decode: {detail}")]
    Raw {
        /// Position in the document.
        index: usize,
        /// Stated block hash.
        hash: Hash,
        /// `header` or `tx <i>`.
        what: String,
        /// Decoder's message.
        detail: String,
    },
    /// A field disagrees with what `raw` decodes to.
    #[error(
        "block {index} {hash}: {path}: field disagrees with raw (document has {stated}, raw gives {decoded})"
    )]
    Mismatch {
        /// Position in the document.
        index: usize,
        /// Stated block hash.
        hash: Hash,
        /// JSON path of the first disagreement.
        path: String,
        /// The document's value.
        stated: String,
        /// The value decoded from raw.
        decoded: String,
    },
}

/// Reads a chain document: checks the parameters against the chain id and genesis, decodes
/// every block from its `raw` fields, and refuses any field that disagrees with them.
/// Returns the parameters and the blocks after genesis, in document order.
pub fn parse_chain_json(text: &str) -> Result<(Params, Vec<Block>), ImportError> {
    let doc: ChainJson = serde_json::from_str(text).map_err(|e| ImportError::Format(e.to_string()))?;
    let params = doc.params.params;
    let genesis = scalechain_consensus::genesis_block(&params);
    let computed = genesis.hash(params.hash);
    if doc.params.chain_id != computed {
        return Err(ImportError::ChainId { stated: doc.params.chain_id, computed });
    }
    let mut blocks = Vec::with_capacity(doc.blocks.len());
    for (index, bj) in doc.blocks.iter().enumerate() {
        let block = decode_block(index, bj)?;
        let rebuilt = block_json(params.hash, &block);
        if rebuilt != *bj {
            let (path, stated, decoded) = first_difference(
                &serde_json::to_value(bj).unwrap_or_default(),
                &serde_json::to_value(&rebuilt).unwrap_or_default(),
                String::new(),
            )
            .unwrap_or_else(|| ("block".into(), "?".into(), "?".into()));
            return Err(ImportError::Mismatch { index, hash: bj.hash, path, stated, decoded });
        }
        if index == 0 {
            if block != genesis {
                return Err(ImportError::Genesis { hash: bj.hash });
            }
        } else {
            blocks.push(block);
        }
    }
    if doc.blocks.is_empty() {
        return Err(ImportError::Format("no blocks (the genesis block must come first)".into()));
    }
    Ok((params, blocks))
}

fn decode_block(index: usize, bj: &BlockJson) -> Result<Block, ImportError> {
    let raw_err = |what: String, detail: String| ImportError::Raw { index, hash: bj.hash, what, detail };
    let bytes = hex::decode(&bj.raw).map_err(|e| raw_err("header".into(), e.to_string()))?;
    let header = Header::decode(&bytes).map_err(|e| raw_err("header".into(), e.to_string()))?;
    let mut txs = Vec::with_capacity(bj.txs.len());
    for (i, t) in bj.txs.iter().enumerate() {
        let bytes = hex::decode(&t.raw).map_err(|e| raw_err(format!("tx {i}"), e.to_string()))?;
        txs.push(Tx::decode(&bytes).map_err(|e| raw_err(format!("tx {i}"), e.to_string()))?);
    }
    Ok(Block { header, txs })
}

/// The first JSON path where two values differ.
fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
    path: String,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(va, vb, p) {
                            return Some(d);
                        }
                    }
                    None => return Some((p, va.to_string(), "nothing".into())),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(va, vb, format!("{path}[{i}]"))),
        (Value::Array(x), Value::Array(y)) => {
            Some((format!("{path}.length"), x.len().to_string(), y.len().to_string()))
        }
        _ if a == b => None,
        _ => Some((path, a.to_string(), b.to_string())),
    }
}

/// Seed 000's DOT picture of `blocks` (consecutive main-chain blocks).
pub fn dot(kind: HashKind, blocks: &[Block]) -> String {
    let mut s = String::new();
    let mut w = |line: String| {
        s.push_str(&line);
        s.push('\n');
    };
    w("digraph scalechain {".into());
    w("  rankdir=LR; compound=true; newrank=true;".into());
    w("  node [fontname=\"monospace\", fontsize=10];".into());
    let mut where_tx = std::collections::HashMap::new();
    for b in blocks {
        for tx in &b.txs {
            where_tx.insert(tx.txid(kind), ());
        }
    }
    let mut prev_anchor: Option<String> = None;
    let mut edges = String::new();
    for b in blocks {
        let bh = b.hash(kind);
        let anchor = format!("b_{}", bh.short());
        w(format!("  subgraph cluster_{} {{", bh.short()));
        w(format!(
            "    label=\"block {} {}\"; shape=box; style=rounded; color=black;",
            b.header.height,
            bh.short()
        ));
        w(format!(
            "    {anchor} [shape=box, style=filled, fillcolor=lightgrey, label=\"height {}\\n{}\\ntxs {}\"];",
            b.header.height,
            bh.short(),
            b.txs.len()
        ));
        for tx in &b.txs {
            let txid = tx.txid(kind);
            let total: u64 = tx.outputs.iter().map(|o| o.value.get()).sum();
            let label = match tx.kind {
                TxKind::COINBASE => "coinbase".to_string(),
                k => k.name(),
            };
            w(format!(
                "    t_{} [shape=ellipse, label=\"{}\\n{}\\nin {} out {} = {}\"];",
                txid.short(),
                label,
                txid.short(),
                tx.inputs.len(),
                tx.outputs.len(),
                total
            ));
            for i in &tx.inputs {
                if where_tx.contains_key(&i.prev.txid) {
                    let _ = writeln!(
                        edges,
                        "  t_{} -> t_{} [label=\"{}\"];",
                        txid.short(),
                        i.prev.txid.short(),
                        i.prev.index
                    );
                } else {
                    let ext = format!("x_{}_{}", i.prev.txid.short(), i.prev.index);
                    let _ = writeln!(
                        edges,
                        "  {ext} [shape=plaintext, label=\"{}:{}\"];",
                        i.prev.txid.short(),
                        i.prev.index
                    );
                    let _ = writeln!(edges, "  t_{} -> {ext};", txid.short());
                }
            }
        }
        w("  }".into());
        if let Some(p) = &prev_anchor {
            let _ = writeln!(edges, "  {p} -> {anchor} [color=green, penwidth=2];");
        }
        prev_anchor = Some(anchor);
    }
    s.push_str(&edges);
    s.push_str("}\n");
    s
}
