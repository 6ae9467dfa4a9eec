//! Chain parameters and the genesis block.
//!
//! The parameters are fixed at genesis: their canonical encoding is carried in the genesis
//! coinbase's `data` (after the height), so the genesis block hash — the chain id — commits to
//! every one of them. Genesis is a function of the parameters alone.

use serde::{Deserialize, Serialize};

use scalechain_types::codec::{put_count, Decode, DecodeError, Encode, Reader};
use scalechain_types::{Amount, Block, Hash, HashKind, Header, Lock, Scheme, SecretKey, Target, Tx, TxOut};

/// Which signature schemes a devnet allows and its premine uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SigMode {
    /// Ed25519 only.
    Ed25519,
    /// secp256k1 ECDSA only.
    Secp256k1,
    /// Both; the premine alternates between them.
    Mixed,
}

impl SigMode {
    /// The schemes allowed.
    pub fn schemes(self) -> Vec<Scheme> {
        match self {
            SigMode::Ed25519 => vec![Scheme::Ed25519],
            SigMode::Secp256k1 => vec![Scheme::Secp256k1],
            SigMode::Mixed => vec![Scheme::Ed25519, Scheme::Secp256k1],
        }
    }

    /// The scheme of the `i`-th generated key.
    pub fn scheme_for(self, i: u64) -> Scheme {
        match self {
            SigMode::Ed25519 => Scheme::Ed25519,
            SigMode::Secp256k1 => Scheme::Secp256k1,
            SigMode::Mixed if i.is_multiple_of(2) => Scheme::Ed25519,
            SigMode::Mixed => Scheme::Secp256k1,
        }
    }
}

impl std::str::FromStr for SigMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ed25519" => Ok(SigMode::Ed25519),
            "secp256k1" => Ok(SigMode::Secp256k1),
            "mixed" => Ok(SigMode::Mixed),
            _ => Err(format!("unknown signature mode {s:?} (expected ed25519, secp256k1 or mixed)")),
        }
    }
}

/// Every consensus parameter of a chain.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Params {
    /// A name for people (part of the chain id like everything else).
    pub name: String,
    /// The hash function for txids, block hashes, Merkle trees, pubkey hashes and sighashes.
    pub hash: HashKind,
    /// Signature schemes that locks and witnesses may use.
    pub schemes: Vec<Scheme>,
    /// Genesis timestamp, ms since the Unix epoch.
    pub genesis_time: u64,
    /// The easiest target allowed.
    pub pow_limit: Target,
    /// The target of genesis and of the first retarget window.
    pub genesis_target: Target,
    /// The intended interval between blocks, ms.
    pub target_block_ms: u64,
    /// Blocks per retarget window.
    pub retarget_interval: u64,
    /// Block reward at height 1.
    pub initial_subsidy: Amount,
    /// Blocks between halvings of the reward.
    pub halving_interval: u64,
    /// Blocks before a coinbase output may be spent (premine outputs are exempt).
    pub coinbase_maturity: u64,
    /// Number of ancestors whose median time a block's time must exceed.
    pub mtp_window: u64,
    /// How far past the validator's clock a block time may be, ms.
    pub max_future_drift_ms: u64,
    /// Largest block encoding, bytes.
    pub max_block_bytes: u64,
    /// Most transactions per block.
    pub max_block_txs: u64,
    /// Largest transaction encoding, bytes.
    pub max_tx_bytes: u64,
    /// Most inputs per transaction.
    pub max_tx_inputs: u64,
    /// Most outputs per transaction.
    pub max_tx_outputs: u64,
    /// Largest `data` field, bytes.
    pub max_tx_data: u64,
    /// Outputs of the genesis coinbase, spendable from block 1.
    pub premine: Vec<TxOut>,
    /// Study only: input signatures are not verified (every other rule still applies, the
    /// key still hashing to the lock), to measure what signatures cost end to end. Declared in
    /// genesis (params format 2, `docs/PROTOCOL.md` §2.9), so a chain that does not declare it
    /// never skips a signature: setting it makes another chain, with another id.
    pub skip_signatures: bool,
}

/// Genesis time of the devnet: 2026-01-01T00:00:00Z.
pub const DEVNET_GENESIS_TIME: u64 = 1_767_225_600_000;
/// Number of premine outputs on a devnet.
pub const DEVNET_PREMINE_OUTPUTS: u64 = 1024;
/// Value of each devnet premine output.
pub const DEVNET_PREMINE_VALUE: u64 = 1_000_000_000;

impl Params {
    /// Devnet parameters: a block in milliseconds of mining, a 1 s target interval, a premine of
    /// [`DEVNET_PREMINE_OUTPUTS`] outputs to the public keys [`devnet_premine_key`] derives.
    pub fn devnet(hash: HashKind, sig: SigMode) -> Params {
        let premine = (0..DEVNET_PREMINE_OUTPUTS)
            .map(|i| {
                let pk = devnet_premine_key(sig, i).public();
                TxOut {
                    value: Amount::new(DEVNET_PREMINE_VALUE).expect("constant in range"),
                    lock: Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(hash) },
                }
            })
            .collect();
        Params {
            name: "devnet".into(),
            hash,
            schemes: sig.schemes(),
            genesis_time: DEVNET_GENESIS_TIME,
            pow_limit: Target::from_bits(252),
            genesis_target: Target::from_bits(244),
            target_block_ms: 1_000,
            retarget_interval: 20,
            initial_subsidy: Amount::new(5_000_000_000).expect("constant in range"),
            halving_interval: 210_000,
            coinbase_maturity: 10,
            mtp_window: 11,
            max_future_drift_ms: 2 * 60 * 60 * 1000,
            max_block_bytes: 32 << 20,
            max_block_txs: 200_000,
            max_tx_bytes: 1 << 20,
            max_tx_inputs: 10_000,
            max_tx_outputs: 10_000,
            max_tx_data: 64 << 10,
            premine,
            skip_signatures: false,
        }
    }

    /// Checks that the parameters describe a usable chain: at least one scheme and no
    /// duplicates, premine total within 2^53 − 1 and locked to allowed schemes, genesis target
    /// within the proof-of-work limit, positive intervals and windows.
    pub fn validate(&self) -> Result<(), String> {
        if self.schemes.is_empty() {
            return Err("no signature scheme allowed".into());
        }
        if (1..self.schemes.len()).any(|i| self.schemes[..i].contains(&self.schemes[i])) {
            return Err("a signature scheme is listed twice".into());
        }
        Amount::checked_sum(self.premine.iter().map(|o| o.value))
            .map_err(|_| "premine total exceeds 2^53 - 1".to_string())?;
        if let Some(o) = self.premine.iter().find(|o| !self.allows(o.lock.scheme)) {
            return Err(format!(
                "premine output locked to {}, which the chain does not allow",
                o.lock.scheme
            ));
        }
        if self.genesis_target > self.pow_limit {
            return Err("genesis_target is easier than pow_limit".into());
        }
        for (name, v) in [
            ("target_block_ms", self.target_block_ms),
            ("halving_interval", self.halving_interval),
            ("mtp_window", self.mtp_window),
            ("max_block_txs", self.max_block_txs),
        ] {
            if v == 0 {
                return Err(format!("{name} must be positive"));
            }
        }
        if self.retarget_interval < 2 {
            return Err("retarget_interval must be at least 2".into());
        }
        Ok(())
    }

    /// The block reward at `height`: halves every `halving_interval` blocks (a shift, so it
    /// reaches zero once the shift passes the subsidy's bit length).
    pub fn subsidy(&self, height: u64) -> Amount {
        let halvings = height / self.halving_interval.max(1);
        if halvings >= 64 {
            return Amount::ZERO;
        }
        Amount::new(self.initial_subsidy.get() >> halvings).expect("a halved amount stays in range")
    }

    /// Is a scheme allowed on this chain?
    pub fn allows(&self, s: Scheme) -> bool {
        self.schemes.contains(&s)
    }

    /// The chain id: the genesis block hash.
    pub fn chain_id(&self) -> Hash {
        genesis_block(self).hash(self.hash)
    }
}

/// The secret key of the `i`-th devnet premine output: public knowledge, for tests and devnets.
/// Its scheme is `sig.scheme_for(i)`, its seed [`devnet_premine_seed`].
pub fn devnet_premine_key(sig: SigMode, i: u64) -> SecretKey {
    SecretKey::from_seed(sig.scheme_for(i), devnet_premine_seed(i))
}

/// The seed of the `i`-th devnet premine key: SHA-256("scalechain/devnet/premine" || i as u64 LE).
pub fn devnet_premine_seed(i: u64) -> [u8; 32] {
    HashKind::Sha256.hash_parts(&[b"scalechain/devnet/premine", &i.to_le_bytes()]).0
}

/// Bit 0 of format 2's flags byte: [`Params::skip_signatures`].
const FLAG_SKIP_SIGNATURES: u8 = 1;

impl Params {
    /// Format 2's flags byte; 0 (format 1) for every chain that declares nothing.
    fn flags(&self) -> u8 {
        if self.skip_signatures {
            FLAG_SKIP_SIGNATURES
        } else {
            0
        }
    }
}

impl Encode for Params {
    fn encode_to(&self, out: &mut Vec<u8>) {
        let flags = self.flags();
        // Format 1 unless a flag is set: the chains that declare nothing keep their ids.
        out.push(if flags == 0 { 1 } else { 2 });
        put_count(out, self.name.len());
        out.extend_from_slice(self.name.as_bytes());
        out.push(self.hash.code());
        put_count(out, self.schemes.len());
        out.extend(self.schemes.iter().map(|s| s.code()));
        out.extend_from_slice(&self.genesis_time.to_le_bytes());
        out.extend_from_slice(&self.pow_limit.0 .0);
        out.extend_from_slice(&self.genesis_target.0 .0);
        for v in [
            self.target_block_ms,
            self.retarget_interval,
            self.initial_subsidy.get(),
            self.halving_interval,
            self.coinbase_maturity,
            self.mtp_window,
            self.max_future_drift_ms,
            self.max_block_bytes,
            self.max_block_txs,
            self.max_tx_bytes,
            self.max_tx_inputs,
            self.max_tx_outputs,
            self.max_tx_data,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_count(out, self.premine.len());
        for o in &self.premine {
            o.encode_to(out);
        }
        if flags != 0 {
            out.push(flags);
        }
    }
}

impl Decode for Params {
    const MIN_LEN: usize = 1 + 4 + 1 + 4 + 8 + 64 + 13 * 8 + 4;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let version = r.u8("params.version")?;
        if version != 1 && version != 2 {
            return Err(r.invalid("params.version", format!("unknown params format {version}")));
        }
        let n = r.count("params.name", 1)?;
        let name = String::from_utf8(r.bytes("params.name", n)?.to_vec())
            .map_err(|_| r.invalid("params.name", "not UTF-8"))?;
        let code = r.u8("params.hash")?;
        let hash = HashKind::from_code(code)
            .ok_or_else(|| r.invalid("params.hash", format!("unknown hash {code}")))?;
        let n = r.count("params.schemes", 1)?;
        let mut schemes = Vec::with_capacity(n);
        for _ in 0..n {
            let c = r.u8("params.schemes")?;
            schemes.push(
                Scheme::from_code(c)
                    .ok_or_else(|| r.invalid("params.schemes", format!("unknown scheme {c}")))?,
            );
        }
        let genesis_time = r.u64("params.genesis_time")?;
        let pow_limit = Target(r.hash("params.pow_limit")?);
        let genesis_target = Target(r.hash("params.genesis_target")?);
        let target_block_ms = r.u64("params.target_block_ms")?;
        let retarget_interval = r.u64("params.retarget_interval")?;
        let initial_subsidy = r.amount("params.initial_subsidy")?;
        let mut next = |f| r.u64(f);
        let halving_interval = next("params.halving_interval")?;
        let coinbase_maturity = next("params.coinbase_maturity")?;
        let mtp_window = next("params.mtp_window")?;
        let max_future_drift_ms = next("params.max_future_drift_ms")?;
        let max_block_bytes = next("params.max_block_bytes")?;
        let max_block_txs = next("params.max_block_txs")?;
        let max_tx_bytes = next("params.max_tx_bytes")?;
        let max_tx_inputs = next("params.max_tx_inputs")?;
        let max_tx_outputs = next("params.max_tx_outputs")?;
        let max_tx_data = next("params.max_tx_data")?;
        let premine = r.vec("params.premine")?;
        let flags = if version == 2 { r.u8("params.flags")? } else { 0 };
        if version == 2 && flags == 0 {
            return Err(r.invalid("params.flags", "format 2 with no flag set (that chain is format 1)"));
        }
        if flags & !FLAG_SKIP_SIGNATURES != 0 {
            return Err(r.invalid("params.flags", format!("unknown flags {flags:#04x}")));
        }
        Ok(Params {
            name,
            hash,
            schemes,
            genesis_time,
            pow_limit,
            genesis_target,
            target_block_ms,
            retarget_interval,
            initial_subsidy,
            halving_interval,
            coinbase_maturity,
            mtp_window,
            max_future_drift_ms,
            max_block_bytes,
            max_block_txs,
            max_tx_bytes,
            max_tx_inputs,
            max_tx_outputs,
            max_tx_data,
            premine,
            skip_signatures: flags & FLAG_SKIP_SIGNATURES != 0,
        })
    }
}

/// The genesis block: height 0, zero parent, one coinbase whose data is `0u64 LE || params`
/// and whose outputs are the premine; nonce 0 (genesis needs no proof of work).
pub fn genesis_block(p: &Params) -> Block {
    let mut data = 0u64.to_le_bytes().to_vec();
    p.encode_to(&mut data);
    let coinbase = Tx {
        version: 1,
        kind: scalechain_types::TxKind::COINBASE,
        inputs: vec![],
        outputs: p.premine.clone(),
        data,
    };
    let txs = vec![coinbase];
    let merkle_root = scalechain_types::merkle::root_of_txs(p.hash, &txs);
    Block {
        header: Header {
            version: 1,
            height: 0,
            prev_hash: Hash::ZERO,
            merkle_root,
            time: p.genesis_time,
            target: p.genesis_target,
            nonce: 0,
        },
        txs,
    }
}

/// Reads the parameters back out of a genesis block.
pub fn params_from_genesis(genesis: &Block) -> Result<Params, DecodeError> {
    let cb = genesis.txs.first().ok_or_else(|| Reader::new(&[]).invalid("genesis", "no coinbase"))?;
    let mut r = Reader::new(&cb.data);
    let h = r.u64("genesis.height")?;
    if h != 0 {
        return Err(r.invalid("genesis.height", "genesis height must be 0"));
    }
    let p = Params::decode_from(&mut r)?;
    r.finish()?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_and_genesis_commits_to_them() {
        for h in HashKind::ALL {
            for s in [SigMode::Ed25519, SigMode::Secp256k1, SigMode::Mixed] {
                let p = Params::devnet(h, s);
                assert_eq!(p.validate(), Ok(()));
                assert_eq!(Params::decode(&p.encode()).as_ref(), Ok(&p));
                let g = genesis_block(&p);
                assert_eq!(params_from_genesis(&g).as_ref(), Ok(&p));
                assert_eq!(g.compute_merkle_root(h), g.header.merkle_root);
            }
        }
        let a = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let mut b = a.clone();
        b.coinbase_maturity += 1;
        assert_ne!(a.chain_id(), b.chain_id(), "every parameter is part of the chain id");
        assert_ne!(a.chain_id(), Params::devnet(HashKind::Blake3, SigMode::Ed25519).chain_id());
    }

    #[test]
    fn skipping_signatures_is_format_2_and_another_chain() {
        let a = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        assert_eq!(a.encode()[0], 1, "a chain declaring nothing stays format 1");
        let mut b = a.clone();
        b.skip_signatures = true;
        let enc = b.encode();
        assert_eq!((enc[0], enc.len(), enc[enc.len() - 1]), (2, a.encode().len() + 1, 1));
        assert_eq!(Params::decode(&enc).as_ref(), Ok(&b));
        assert_eq!(params_from_genesis(&genesis_block(&b)).as_ref(), Ok(&b));
        assert_ne!(a.chain_id(), b.chain_id());
        // Format 2 without a flag, or with an unknown one, does not decode; nor does format 3.
        let mut none = enc.clone();
        *none.last_mut().unwrap() = 0;
        assert!(Params::decode(&none).unwrap_err().to_string().contains("params.flags"));
        let mut unknown = enc.clone();
        *unknown.last_mut().unwrap() = 3;
        assert!(Params::decode(&unknown).unwrap_err().to_string().contains("unknown flags"));
        let mut three = enc;
        three[0] = 3;
        assert!(Params::decode(&three).is_err());
        // A format-1 encoding with a trailing byte is not format 2.
        let mut trailing = a.encode();
        trailing.push(1);
        assert!(Params::decode(&trailing).is_err());
    }

    #[test]
    fn validate_refuses_unusable_parameters() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let mut q = p.clone();
        q.schemes = vec![];
        assert!(q.validate().is_err());
        let mut q = p.clone();
        q.schemes = vec![Scheme::Secp256k1];
        assert!(q.validate().unwrap_err().contains("premine"));
        let mut q = p.clone();
        q.genesis_target = Target::from_bits(256);
        assert!(q.validate().is_err());
        let mut q = p.clone();
        q.premine[0].value = Amount::MAX;
        assert!(q.validate().unwrap_err().contains("2^53"));
        let mut q = p;
        q.retarget_interval = 1;
        assert!(q.validate().is_err());
    }

    #[test]
    fn subsidy_halves() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        assert_eq!(p.subsidy(1), p.initial_subsidy);
        assert_eq!(p.subsidy(p.halving_interval).get(), p.initial_subsidy.get() / 2);
        assert_eq!(p.subsidy(p.halving_interval * 64), Amount::ZERO);
    }
}
