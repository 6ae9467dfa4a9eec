//! ScaleChain's wallet library: what `scalechain wallet new|address|balance|send|backup|restore`
//! needs, with the node's HTTP API providing the coins and taking the signed transactions.
//!
//! - [`address`]: a [`Lock`](scalechain_types::Lock) as a bech32m string whose prefix names the
//!   network (`sc`, `scdev`); parsing reports what was wrong ([`AddressError`]).
//! - [`keystore`] and [`Wallet`]: the keys in one file, encrypted with a passphrase
//!   (Argon2id, then XChaCha20-Poly1305 with the header as associated data), written atomically
//!   with mode 0600; keys derived deterministically from one master seed ([`keys`]), plus imported
//!   seeds; backup and restore; secrets zeroized on drop.
//! - [`passphrase`]: passphrases from an environment variable or a file, for scripts.
//! - [`build`]: coin selection (largest-first), fees from the exact encoded size, change above a
//!   dust limit, signing every input over `sighash(chain_id, txid)`.
//! - [`balance`]: checked sums of coins, in total and per address.
//!
//! A typical `send`:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use scalechain_types::{Amount, Hash, HashKind, OutPoint, TxOut};
//! use scalechain_wallet::*;
//!
//! let pass = Passphrase::from_env("SCALECHAIN_PASSPHRASE")?;
//! let wallet = Wallet::open("wallet.json".as_ref(), &pass)?;
//! let chain = ChainContext { hash: HashKind::Sha256, chain_id: Hash([0; 32]) }; // from the node
//! let coins: Vec<(OutPoint, TxOut)> = vec![]; // the node's list for wallet.locks(chain.hash)
//! let to = parse_address("scdev1...", &AddressHrp::devnet(), chain.hash)?;
//! let change = wallet.keys()[0].lock(chain.hash);
//! let options = BuildOptions::new(FeeRate::per_kb(Amount::new(1_000)?));
//! let req = TransferRequest { coins: &coins, to, amount: Amount::new(5_000)?, change, options };
//! let built = build_transfer(&wallet.keyring(chain.hash), &chain, &req)?;
//! // submit built.tx to the node
//! # Ok(()) }
//! ```
//!
//! What it must not do: talk to the network, or read a clock. Its IO is the wallet file, its
//! backup, the passphrase file and the operating system's random number generator (master
//! seeds, salts, nonces).

pub mod address;
pub mod balance;
pub mod build;
pub mod keys;
pub mod keystore;
pub mod passphrase;
pub mod wallet;

pub use address::{encode_address, parse_address, Address, AddressError, AddressHrp};
pub use balance::{balance, AddressBalance, Balance, BalanceError};
pub use build::{
    build_app_tx, build_transfer, select_coins, select_fee, transfer_size, AppTxRequest, BuildError,
    BuildOptions, BuiltTransfer, ChainContext, Selection, TransferRequest,
};
pub use keys::{KeyId, Seed, SeedError};
pub use keystore::{KdfParams, KeystoreError};
pub use passphrase::{Passphrase, PassphraseError, PassphraseSource};
/// Fee rates are the chain's one type (the mempool judges transactions with it too).
pub use scalechain_types::FeeRate;
pub use wallet::{KeyInfo, Keyring, Signer, Wallet};
