//! The unlocked wallet: its keys in memory, tied to its encrypted file.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use scalechain_types::{Hash, HashKind, Lock, PubKey, Scheme, Signature};
use zeroize::Zeroizing;

use crate::address::{Address, AddressHrp};
use crate::keys::{KeyId, Secrets, Seed, SigningKey, MAX_KEYS};
use crate::keystore::{self, KdfParams, KeystoreError, KEY_LEN, SALT_LEN};
use crate::passphrase::Passphrase;

/// A key of the wallet and its public key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KeyInfo {
    /// Which key.
    pub id: KeyId,
    /// Its public key.
    pub pubkey: PubKey,
}

impl KeyInfo {
    /// The lock paying to this key on a chain hashing with `hash`.
    pub fn lock(&self, hash: HashKind) -> Lock {
        Lock { scheme: self.pubkey.scheme(), pubkey_hash: self.pubkey.hash(hash) }
    }

    /// Does the wallet hand this key out to receive (and as change)? Keys derived from its seed
    /// do; imported ones (a devnet premine key, say) are spent from only: others may know
    /// their secret.
    pub fn receives(&self) -> bool {
        matches!(self.id, KeyId::Derived { .. })
    }

    /// The address of this key on a chain hashing with `hash`, on the network of `hrp`.
    pub fn address(&self, hash: HashKind, hrp: &AddressHrp) -> Address {
        Address::new(*hrp, hash, self.lock(hash))
    }
}

/// An unlocked wallet: the secrets of its file, decrypted, and the key that encrypts them, so
/// that new keys can be saved without asking for the passphrase again. Every change is written
/// to the file before the method that makes it returns.
pub struct Wallet {
    path: PathBuf,
    kdf: KdfParams,
    salt: [u8; SALT_LEN],
    key: Zeroizing<[u8; KEY_LEN]>,
    secrets: Secrets,
    keys: Vec<KeyInfo>,
}

impl fmt::Debug for Wallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wallet")
            .field("path", &self.path)
            .field("kdf", &self.kdf)
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl Wallet {
    /// Creates a wallet file at `path` with a fresh random master seed and no keys yet (add them
    /// with [`Wallet::new_key`]). Refuses to overwrite an existing file or to use an empty
    /// passphrase.
    pub fn create(path: &Path, passphrase: &Passphrase, kdf: KdfParams) -> Result<Wallet, KeystoreError> {
        Self::create_from_master_seed(path, passphrase, kdf, Seed::random()?)
    }

    /// [`Wallet::create`] from a given master seed (to rebuild a wallet from a written-down seed).
    pub fn create_from_master_seed(
        path: &Path,
        passphrase: &Passphrase,
        kdf: KdfParams,
        master: Seed,
    ) -> Result<Wallet, KeystoreError> {
        let wallet = Self::unlocked(path, passphrase, kdf, Secrets::new(master))?;
        wallet.write(&wallet.path, false)?;
        Ok(wallet)
    }

    fn unlocked(
        path: &Path,
        passphrase: &Passphrase,
        kdf: KdfParams,
        secrets: Secrets,
    ) -> Result<Wallet, KeystoreError> {
        if passphrase.is_empty() {
            return Err(KeystoreError::EmptyPassphrase);
        }
        kdf.check().map_err(KeystoreError::BadKdfParams)?;
        let mut salt = [0u8; SALT_LEN];
        keystore::random_bytes(&mut salt)?;
        let key = keystore::derive_key(passphrase, &kdf, &salt)?;
        Ok(Self::assemble(path.to_path_buf(), kdf, salt, key, secrets))
    }

    fn assemble(
        path: PathBuf,
        kdf: KdfParams,
        salt: [u8; SALT_LEN],
        key: Zeroizing<[u8; KEY_LEN]>,
        secrets: Secrets,
    ) -> Wallet {
        let keys = secrets
            .key_ids()
            .filter_map(|id| {
                let (scheme, seed) = secrets.seed_of(id)?;
                Some(KeyInfo { id, pubkey: SigningKey::from_seed(scheme, &seed).public() })
            })
            .collect();
        Wallet { path, kdf, salt, key, secrets, keys }
    }

    /// Opens and decrypts the wallet file at `path`.
    pub fn open(path: &Path, passphrase: &Passphrase) -> Result<Wallet, KeystoreError> {
        let bytes = keystore::read_bounded(path)?;
        let opened = keystore::unseal(path, &bytes, passphrase)?;
        let secrets = Secrets::decode(&opened.plaintext).map_err(|e| KeystoreError::Corrupt {
            path: path.to_path_buf(),
            field: "ciphertext".into(),
            reason: format!("the decrypted payload is malformed: {e}"),
        })?;
        Ok(Self::assemble(path.to_path_buf(), opened.header.kdf, opened.header.salt, opened.key, secrets))
    }

    /// Restores a backup: opens the file at `backup` with its passphrase and writes the wallet to
    /// `dest` (which must not exist yet), encrypted under the same passphrase. The restored
    /// wallet has the same keys, hence the same addresses.
    pub fn restore(backup: &Path, passphrase: &Passphrase, dest: &Path) -> Result<Wallet, KeystoreError> {
        let mut wallet = Self::open(backup, passphrase)?;
        wallet.path = dest.to_path_buf();
        wallet.write(dest, false)?;
        Ok(wallet)
    }

    /// Writes a backup to `dest` (which must not exist yet): the wallet file, re-encrypted with a
    /// fresh nonce under the same passphrase. [`Wallet::restore`] or [`Wallet::open`] reads it.
    pub fn backup(&self, dest: &Path) -> Result<(), KeystoreError> {
        self.write(dest, false)
    }

    /// Re-encrypts the wallet file under a new passphrase (new salt, given parameters).
    pub fn change_passphrase(
        &mut self,
        passphrase: &Passphrase,
        kdf: KdfParams,
    ) -> Result<(), KeystoreError> {
        let fresh = Self::unlocked(&self.path, passphrase, kdf, self.secrets.clone())?;
        fresh.write(&fresh.path, true)?;
        *self = fresh;
        Ok(())
    }

    fn write(&self, dest: &Path, overwrite: bool) -> Result<(), KeystoreError> {
        let payload = self.secrets.encode();
        let bytes = keystore::seal(&self.key, self.kdf, self.salt, &payload)?;
        keystore::write_atomic(dest, &bytes, overwrite)
    }

    /// The wallet file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The Argon2id parameters of the file.
    pub fn kdf_params(&self) -> KdfParams {
        self.kdf
    }

    /// The master seed (a secret): with [`Wallet::derived_count`] it restores every derived key.
    pub fn master_seed(&self) -> &Seed {
        &self.secrets.master
    }

    /// How many keys have been derived for `scheme`.
    pub fn derived_count(&self, scheme: Scheme) -> u32 {
        self.secrets.derived[usize::from(scheme.code())]
    }

    /// Derives the next key of `scheme`, saves the file, and returns the key.
    pub fn new_key(&mut self, scheme: Scheme) -> Result<KeyInfo, KeystoreError> {
        let slot = usize::from(scheme.code());
        let index = self.secrets.derived[slot];
        if index >= MAX_KEYS {
            return Err(KeystoreError::TooManyKeys { kind: scheme.name().into(), max: MAX_KEYS });
        }
        self.secrets.derived[slot] = index + 1;
        if let Err(e) = self.write(&self.path, true) {
            self.secrets.derived[slot] = index;
            return Err(e);
        }
        let id = KeyId::Derived { scheme, index };
        let seed = crate::keys::derive_seed(&self.secrets.master, scheme, index);
        let info = KeyInfo { id, pubkey: SigningKey::from_seed(scheme, &seed).public() };
        self.keys.push(info);
        self.keys.sort_by_key(|k| k.id);
        Ok(info)
    }

    /// Adds a key from a seed made elsewhere (e.g. a devnet premine key), saves the file, and
    /// returns the key. A seed whose public key the wallet already has is not added twice: the
    /// existing key is returned.
    pub fn import_seed(&mut self, scheme: Scheme, seed: Seed) -> Result<KeyInfo, KeystoreError> {
        let pubkey = SigningKey::from_seed(scheme, &seed).public();
        if let Some(existing) = self.keys.iter().find(|k| k.pubkey == pubkey) {
            return Ok(*existing);
        }
        let index = self.secrets.imported.len() as u32;
        if index >= MAX_KEYS {
            return Err(KeystoreError::TooManyKeys { kind: "imported".into(), max: MAX_KEYS });
        }
        self.secrets.imported.push((scheme, seed));
        if let Err(e) = self.write(&self.path, true) {
            self.secrets.imported.pop();
            return Err(e);
        }
        let info = KeyInfo { id: KeyId::Imported { index }, pubkey };
        self.keys.push(info);
        Ok(info)
    }

    /// Every key: derived ed25519 keys, derived secp256k1 keys, then imported keys, each in order.
    pub fn keys(&self) -> &[KeyInfo] {
        &self.keys
    }

    /// The locks of every key on a chain hashing with `hash`.
    pub fn locks(&self, hash: HashKind) -> Vec<Lock> {
        self.keys.iter().map(|k| k.lock(hash)).collect()
    }

    /// The addresses of every key on a chain hashing with `hash`, on the network of `hrp`.
    pub fn addresses(&self, hash: HashKind, hrp: &AddressHrp) -> Vec<Address> {
        self.keys.iter().map(|k| k.address(hash, hrp)).collect()
    }

    /// A signer for a chain hashing with `hash`: finds the key behind a lock, and signs.
    pub fn keyring(&self, hash: HashKind) -> Keyring<'_> {
        let mut by_lock = HashMap::with_capacity(self.keys.len());
        for k in &self.keys {
            by_lock.entry(k.lock(hash)).or_insert(*k);
        }
        Keyring { secrets: &self.secrets, by_lock }
    }
}

/// What transaction building needs from a wallet: the public key behind a lock, and signatures
/// by it.
pub trait Signer {
    /// The public key whose hash the lock holds, if this signer has its secret key.
    fn pubkey_for(&self, lock: &Lock) -> Option<PubKey>;
    /// Signs the 32-byte message with the key behind `lock`; `None` if this signer lacks it.
    fn sign_for(&self, lock: &Lock, msg: &Hash) -> Option<Signature>;
}

/// The wallet's keys indexed by lock for one chain's hash function.
pub struct Keyring<'w> {
    secrets: &'w Secrets,
    by_lock: HashMap<Lock, KeyInfo>,
}

impl fmt::Debug for Keyring<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring").field("keys", &self.by_lock.len()).finish_non_exhaustive()
    }
}

impl Keyring<'_> {
    /// The key behind a lock, if the wallet has it.
    pub fn key_for(&self, lock: &Lock) -> Option<KeyInfo> {
        self.by_lock.get(lock).copied()
    }

    /// Does the wallet hold the key behind `lock`?
    pub fn owns(&self, lock: &Lock) -> bool {
        self.by_lock.contains_key(lock)
    }
}

impl Signer for Keyring<'_> {
    fn pubkey_for(&self, lock: &Lock) -> Option<PubKey> {
        self.key_for(lock).map(|k| k.pubkey)
    }

    fn sign_for(&self, lock: &Lock, msg: &Hash) -> Option<Signature> {
        let info = self.by_lock.get(lock)?;
        let (scheme, seed) = self.secrets.seed_of(info.id)?;
        let key = SigningKey::from_seed(scheme, &seed);
        Some(key.key().sign(msg))
    }
}
