//! The encrypted wallet file: a versioned JSON envelope around an AEAD-sealed secret payload.
//!
//! ```json
//! {
//!   "format": "scalechain-wallet",
//!   "version": 1,
//!   "kdf": { "algorithm": "argon2id", "argon2_version": 19,
//!            "m_cost_kib": 65536, "t_cost": 3, "p_cost": 1, "salt": "<16 bytes, hex>" },
//!   "cipher": { "algorithm": "xchacha20poly1305", "nonce": "<24 bytes, hex>" },
//!   "ciphertext": "<hex: payload encrypted, then the 16-byte tag>"
//! }
//! ```
//!
//! - The key is Argon2id(passphrase, salt) with the stored parameters, 32 bytes.
//! - The AEAD is XChaCha20-Poly1305 with a fresh random 24-byte nonce on every write. Its
//!   associated data is the header in a canonical text form ([`Header::associated_data`]), so
//!   changing any parameter, the salt or the nonce makes decryption fail.
//! - A failed decryption is reported as [`KeystoreError::WrongPassphrase`]: the passphrase is
//!   wrong, or the file was altered (the two cannot be told apart). Anything wrong with the
//!   envelope itself (not JSON, missing or unknown fields, bad hex, lengths, parameters out of
//!   bounds) is [`KeystoreError::Corrupt`], an unknown `format` is
//!   [`KeystoreError::NotAWallet`] and another `version` is
//!   [`KeystoreError::UnsupportedVersion`].
//! - Files are written atomically: a temporary file in the same directory (mode 0600 on unix),
//!   written and fsynced, renamed over the target, then the directory fsynced.
//! - Reading is bounded: files above [`MAX_FILE_BYTES`] are refused before they are read, and
//!   the Argon2 parameters of a file are bounded ([`KdfParams::check`]) before any memory is
//!   allocated for them.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::passphrase::Passphrase;

/// The `format` tag of a wallet file.
pub const FORMAT: &str = "scalechain-wallet";
/// The file format version this crate writes and reads.
pub const FORMAT_VERSION: u64 = 1;
/// The largest wallet file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// Salt length, bytes.
pub const SALT_LEN: usize = 16;
/// XChaCha20-Poly1305 nonce length, bytes.
pub const NONCE_LEN: usize = 24;
/// Poly1305 tag length, bytes.
pub const TAG_LEN: usize = 16;
/// Length of the derived encryption key, bytes.
pub const KEY_LEN: usize = 32;

const KDF_ALGORITHM: &str = "argon2id";
const ARGON2_VERSION: u32 = 0x13;
const CIPHER_ALGORITHM: &str = "xchacha20poly1305";

/// Argon2id cost parameters, stored in the file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct KdfParams {
    /// Memory, KiB.
    pub m_cost_kib: u32,
    /// Passes over the memory.
    pub t_cost: u32,
    /// Lanes (computed one after another: this crate does not use threads for Argon2).
    pub p_cost: u32,
}

impl KdfParams {
    /// The default for new wallets: 64 MiB, 3 passes, 1 lane.
    pub const DEFAULT: KdfParams = KdfParams { m_cost_kib: 64 * 1024, t_cost: 3, p_cost: 1 };
    /// The most memory a file may ask for: 1 GiB.
    pub const MAX_M_COST_KIB: u32 = 1 << 20;
    /// The most passes a file may ask for.
    pub const MAX_T_COST: u32 = 64;
    /// The most lanes a file may ask for.
    pub const MAX_P_COST: u32 = 16;

    /// Cheap parameters (64 KiB, 1 pass) for tests only: they protect nothing.
    pub const INSECURE_FAST: KdfParams = KdfParams { m_cost_kib: 64, t_cost: 1, p_cost: 1 };

    /// Checks the parameters against Argon2's own minimums (`t >= 1`, `p >= 1`,
    /// `m >= 8 * p`) and this crate's maximums; the error says which bound failed.
    pub fn check(&self) -> Result<(), String> {
        if self.t_cost == 0 || self.t_cost > Self::MAX_T_COST {
            return Err(format!("t_cost {} is not from 1 to {}", self.t_cost, Self::MAX_T_COST));
        }
        if self.p_cost == 0 || self.p_cost > Self::MAX_P_COST {
            return Err(format!("p_cost {} is not from 1 to {}", self.p_cost, Self::MAX_P_COST));
        }
        let min_m = 8 * self.p_cost;
        if self.m_cost_kib < min_m || self.m_cost_kib > Self::MAX_M_COST_KIB {
            return Err(format!(
                "m_cost_kib {} is not from {min_m} to {}",
                self.m_cost_kib,
                Self::MAX_M_COST_KIB
            ));
        }
        Ok(())
    }
}

impl Default for KdfParams {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What went wrong with a wallet file or its secrets.
#[derive(Debug, thiserror::Error)]
pub enum KeystoreError {
    /// A file operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done (`reading`, `writing`, `renaming`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// Refusing to overwrite an existing file.
    #[error("{path} already exists; refusing to overwrite it")]
    AlreadyExists {
        /// The file.
        path: PathBuf,
    },
    /// The file is larger than any wallet file.
    #[error("{path} is {size} bytes; a wallet file is at most {max}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The file is JSON but not a ScaleChain wallet.
    #[error("{path} is not a ScaleChain wallet file (format {found:?}, expected {FORMAT:?})")]
    NotAWallet {
        /// The file.
        path: PathBuf,
        /// The `format` it has, if any.
        found: String,
    },
    /// The file's format version is not one this crate reads.
    #[error("{path} has wallet format version {found}; this version reads only {FORMAT_VERSION}")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: String,
    },
    /// The file is damaged or not well formed.
    #[error("{path} is corrupt: {field}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The field or part that is wrong.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Decryption failed: the passphrase is wrong, or the file was altered.
    #[error("cannot decrypt {path}: wrong passphrase (or the file was altered)")]
    WrongPassphrase {
        /// The file.
        path: PathBuf,
    },
    /// Key-derivation parameters out of bounds (when creating or re-encrypting).
    #[error("invalid key-derivation parameters: {0}")]
    BadKdfParams(String),
    /// An empty passphrase was given for a new wallet.
    #[error("the passphrase is empty")]
    EmptyPassphrase,
    /// Argon2 failed (e.g. the memory could not be allocated).
    #[error("key derivation failed: {0}")]
    Kdf(String),
    /// The operating system's random number generator failed.
    #[error("the operating system's random number generator failed: {0}")]
    Rng(String),
    /// The AEAD refused to encrypt (only possible for absurd lengths).
    #[error("encryption failed")]
    Encrypt,
    /// The wallet holds the most keys of a kind it may.
    #[error("the wallet already holds {max} {kind} keys, the most it may")]
    TooManyKeys {
        /// `ed25519`, `secp256k1` or `imported`.
        kind: String,
        /// The limit.
        max: u32,
    },
}

/// Fills `buf` from the operating system's random number generator.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<(), KeystoreError> {
    getrandom::fill(buf).map_err(|e| KeystoreError::Rng(e.to_string()))
}

/// The cleartext part of a sealed file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Header {
    pub kdf: KdfParams,
    pub salt: [u8; SALT_LEN],
    pub nonce: [u8; NONCE_LEN],
}

impl Header {
    /// The AEAD's associated data: every header field in one canonical line, e.g.
    /// `scalechain-wallet/1 argon2id/19 m=65536 t=3 p=1 salt=<hex> xchacha20poly1305 nonce=<hex>`.
    pub fn associated_data(&self) -> Vec<u8> {
        format!(
            "{FORMAT}/{FORMAT_VERSION} {KDF_ALGORITHM}/{ARGON2_VERSION} m={} t={} p={} salt={} \
             {CIPHER_ALGORITHM} nonce={}",
            self.kdf.m_cost_kib,
            self.kdf.t_cost,
            self.kdf.p_cost,
            hex::encode(self.salt),
            hex::encode(self.nonce)
        )
        .into_bytes()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    format: String,
    version: u64,
    kdf: KdfJson,
    cipher: CipherJson,
    ciphertext: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KdfJson {
    algorithm: String,
    argon2_version: u32,
    m_cost_kib: u32,
    t_cost: u32,
    p_cost: u32,
    salt: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CipherJson {
    algorithm: String,
    nonce: String,
}

/// Derives the 32-byte encryption key: Argon2id v19 over the passphrase and salt.
pub(crate) fn derive_key(
    passphrase: &Passphrase,
    kdf: &KdfParams,
    salt: &[u8; SALT_LEN],
) -> Result<Zeroizing<[u8; KEY_LEN]>, KeystoreError> {
    kdf.check().map_err(KeystoreError::BadKdfParams)?;
    let params = argon2::Params::new(kdf.m_cost_kib, kdf.t_cost, kdf.p_cost, Some(KEY_LEN))
        .map_err(|e| KeystoreError::BadKdfParams(e.to_string()))?;
    let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    argon
        .hash_password_into(passphrase.as_bytes(), salt, &mut key[..])
        .map_err(|e| KeystoreError::Kdf(e.to_string()))?;
    Ok(key)
}

/// Encrypts `plaintext` under `key` with a fresh nonce; returns the whole file's bytes.
pub(crate) fn seal(
    key: &[u8; KEY_LEN],
    kdf: KdfParams,
    salt: [u8; SALT_LEN],
    plaintext: &[u8],
) -> Result<Vec<u8>, KeystoreError> {
    let mut nonce = [0u8; NONCE_LEN];
    random_bytes(&mut nonce)?;
    seal_with_nonce(key, Header { kdf, salt, nonce }, plaintext)
}

fn seal_with_nonce(key: &[u8; KEY_LEN], header: Header, plaintext: &[u8]) -> Result<Vec<u8>, KeystoreError> {
    let cipher = XChaCha20Poly1305::new_from_slice(key).map_err(|_| KeystoreError::Encrypt)?;
    // Room for the tag up front, so the buffer holding the plaintext never reallocates (a
    // reallocation would leave a copy of the plaintext behind, unzeroized).
    let mut buf = Zeroizing::new(Vec::with_capacity(plaintext.len() + TAG_LEN));
    buf.extend_from_slice(plaintext);
    cipher
        .encrypt_in_place(&XNonce::from(header.nonce), &header.associated_data(), &mut *buf)
        .map_err(|_| KeystoreError::Encrypt)?;
    let file = FileV1 {
        format: FORMAT.to_string(),
        version: FORMAT_VERSION,
        kdf: KdfJson {
            algorithm: KDF_ALGORITHM.to_string(),
            argon2_version: ARGON2_VERSION,
            m_cost_kib: header.kdf.m_cost_kib,
            t_cost: header.kdf.t_cost,
            p_cost: header.kdf.p_cost,
            salt: hex::encode(header.salt),
        },
        cipher: CipherJson { algorithm: CIPHER_ALGORITHM.to_string(), nonce: hex::encode(header.nonce) },
        ciphertext: hex::encode(&*buf),
    };
    let mut out = serde_json::to_vec_pretty(&file).map_err(|_| KeystoreError::Encrypt)?;
    out.push(b'\n');
    Ok(out)
}

/// A decrypted file.
pub(crate) struct Opened {
    pub header: Header,
    pub key: Zeroizing<[u8; KEY_LEN]>,
    pub plaintext: Zeroizing<Vec<u8>>,
}

/// Parses the envelope (without decrypting): the header and the ciphertext.
pub(crate) fn parse_envelope(path: &Path, bytes: &[u8]) -> Result<(Header, Vec<u8>), KeystoreError> {
    let corrupt = |field: &str, reason: String| KeystoreError::Corrupt {
        path: path.to_path_buf(),
        field: field.to_string(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| corrupt("file", format!("not valid JSON: {e}")))?;
    let format = value.get("format");
    if format.and_then(|f| f.as_str()) != Some(FORMAT) {
        let found = match format {
            Some(serde_json::Value::String(s)) => s.chars().take(64).collect(),
            Some(other) => other.to_string().chars().take(64).collect(),
            None => "<missing>".to_string(),
        };
        return Err(KeystoreError::NotAWallet { path: path.to_path_buf(), found });
    }
    match value.get("version") {
        Some(v) if v.as_u64() == Some(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(KeystoreError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: v.to_string().chars().take(64).collect(),
            })
        }
        None => return Err(corrupt("version", "missing".into())),
    }
    let file: FileV1 = serde_json::from_value(value).map_err(|e| corrupt("file", e.to_string()))?;
    if file.kdf.algorithm != KDF_ALGORITHM {
        return Err(corrupt("kdf.algorithm", format!("{:?} is not {KDF_ALGORITHM:?}", file.kdf.algorithm)));
    }
    if file.kdf.argon2_version != ARGON2_VERSION {
        return Err(corrupt(
            "kdf.argon2_version",
            format!("{} is not {ARGON2_VERSION}", file.kdf.argon2_version),
        ));
    }
    let kdf = KdfParams { m_cost_kib: file.kdf.m_cost_kib, t_cost: file.kdf.t_cost, p_cost: file.kdf.p_cost };
    kdf.check().map_err(|r| corrupt("kdf", r))?;
    let salt = decode_fixed::<SALT_LEN>(&file.kdf.salt).map_err(|r| corrupt("kdf.salt", r))?;
    if file.cipher.algorithm != CIPHER_ALGORITHM {
        return Err(corrupt(
            "cipher.algorithm",
            format!("{:?} is not {CIPHER_ALGORITHM:?}", file.cipher.algorithm),
        ));
    }
    let nonce = decode_fixed::<NONCE_LEN>(&file.cipher.nonce).map_err(|r| corrupt("cipher.nonce", r))?;
    let ciphertext =
        hex::decode(&file.ciphertext).map_err(|e| corrupt("ciphertext", format!("bad hex: {e}")))?;
    if ciphertext.len() < TAG_LEN {
        return Err(corrupt(
            "ciphertext",
            format!("{} bytes; it must hold at least the {TAG_LEN}-byte tag", ciphertext.len()),
        ));
    }
    Ok((Header { kdf, salt, nonce }, ciphertext))
}

/// Parses and decrypts a wallet file's bytes with a passphrase.
pub(crate) fn unseal(path: &Path, bytes: &[u8], passphrase: &Passphrase) -> Result<Opened, KeystoreError> {
    let (header, ciphertext) = parse_envelope(path, bytes)?;
    let key = derive_key(passphrase, &header.kdf, &header.salt)?;
    let plaintext = decrypt(path, &key, &header, ciphertext)?;
    Ok(Opened { header, key, plaintext })
}

fn decrypt(
    path: &Path,
    key: &[u8; KEY_LEN],
    header: &Header,
    ciphertext: Vec<u8>,
) -> Result<Zeroizing<Vec<u8>>, KeystoreError> {
    let cipher = XChaCha20Poly1305::new_from_slice(key).map_err(|_| KeystoreError::Encrypt)?;
    let mut buf = Zeroizing::new(ciphertext);
    cipher
        .decrypt_in_place(&XNonce::from(header.nonce), &header.associated_data(), &mut *buf)
        .map_err(|_| KeystoreError::WrongPassphrase { path: path.to_path_buf() })?;
    Ok(buf)
}

fn decode_fixed<const N: usize>(s: &str) -> Result<[u8; N], String> {
    if s.len() != 2 * N {
        return Err(format!("{} hex digits; expected {}", s.len(), 2 * N));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).map_err(|e| format!("bad hex: {e}"))?;
    Ok(out)
}

/// Reads a file of at most [`MAX_FILE_BYTES`].
pub(crate) fn read_bounded(path: &Path) -> Result<Vec<u8>, KeystoreError> {
    let io = |op, source| KeystoreError::Io { op, path: path.to_path_buf(), source };
    let file = File::open(path).map_err(|e| io("opening", e))?;
    let size = file.metadata().map_err(|e| io("reading metadata of", e))?.len();
    if size > MAX_FILE_BYTES {
        return Err(KeystoreError::TooLarge { path: path.to_path_buf(), size, max: MAX_FILE_BYTES });
    }
    let mut out = Vec::with_capacity(size as usize);
    // The file may grow between the metadata call and the read: read one byte past the limit.
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut out).map_err(|e| io("reading", e))?;
    if out.len() as u64 > MAX_FILE_BYTES {
        return Err(KeystoreError::TooLarge {
            path: path.to_path_buf(),
            size: out.len() as u64,
            max: MAX_FILE_BYTES,
        });
    }
    Ok(out)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically: a new temporary file beside it (mode 0600 on unix),
/// fsynced, renamed over `path`, then the directory fsynced. With `overwrite == false` an
/// existing `path` is an error (checked just before the rename).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], overwrite: bool) -> Result<(), KeystoreError> {
    let io = |op, p: &Path, source| KeystoreError::Io { op, path: p.to_path_buf(), source };
    let name = path.file_name().ok_or_else(|| {
        io("writing", path, std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"))
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !overwrite && path.try_exists().map_err(|e| io("checking", path, e))? {
        return Err(KeystoreError::AlreadyExists { path: path.to_path_buf() });
    }
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}-{}", std::process::id(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)));
    let tmp = dir.join(tmp_name);
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut file = opts.open(&tmp).map_err(|e| io("creating", &tmp, e))?;
    let result = (|| {
        file.write_all(bytes).map_err(|e| io("writing", &tmp, e))?;
        file.sync_all().map_err(|e| io("syncing", &tmp, e))?;
        drop(file);
        if !overwrite && path.try_exists().map_err(|e| io("checking", path, e))? {
            return Err(KeystoreError::AlreadyExists { path: path.to_path_buf() });
        }
        std::fs::rename(&tmp, path).map_err(|e| io("renaming the new file over", path, e))
    })();
    if result.is_err() {
        // Best effort: the temporary file holds only ciphertext, but should not linger.
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    #[cfg(unix)]
    {
        File::open(&dir).and_then(|d| d.sync_all()).map_err(|e| io("syncing directory", &dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn seal_unseal_round_trip_and_tamper_detection() {
        let pass = Passphrase::from("pw");
        let kdf = KdfParams::INSECURE_FAST;
        let salt = [3u8; SALT_LEN];
        let key = derive_key(&pass, &kdf, &salt).unwrap();
        let bytes = seal(&key, kdf, salt, b"secret payload").unwrap();
        let p = Path::new("w.json");
        let opened = unseal(p, &bytes, &pass).unwrap();
        assert_eq!(&opened.plaintext[..], b"secret payload");
        assert_eq!(opened.header.kdf, kdf);
        assert_eq!(opened.header.salt, salt);
        assert!(matches!(
            unseal(p, &bytes, &Passphrase::from("px")),
            Err(KeystoreError::WrongPassphrase { .. })
        ));

        // Changing a header field that still parses (the cost) breaks the associated data.
        let text = String::from_utf8(bytes.clone()).unwrap();
        let altered = text.replace("\"t_cost\": 1", "\"t_cost\": 2");
        assert_ne!(altered, text);
        assert!(matches!(unseal(p, altered.as_bytes(), &pass), Err(KeystoreError::WrongPassphrase { .. })));
        // With the same key, a different nonce in the header also fails (AAD and nonce).
        let (h, _) = parse_envelope(p, &bytes).unwrap();
        let mut other = h;
        other.nonce[0] ^= 1;
        let swapped = text.replace(&hex::encode(h.nonce), &hex::encode(other.nonce));
        assert!(matches!(unseal(p, swapped.as_bytes(), &pass), Err(KeystoreError::WrongPassphrase { .. })));
    }

    #[test]
    fn envelope_errors_are_typed() {
        let pass = Passphrase::from("pw");
        let kdf = KdfParams::INSECURE_FAST;
        let key = derive_key(&pass, &kdf, &[0; SALT_LEN]).unwrap();
        let good = String::from_utf8(seal(&key, kdf, [0; SALT_LEN], b"x").unwrap()).unwrap();
        let p = Path::new("w.json");
        let check = |text: &str| parse_envelope(p, text.as_bytes()).map(|_| ()).unwrap_err();
        assert!(matches!(check("not json"), KeystoreError::Corrupt { .. }));
        assert!(matches!(check("{\"format\": \"other\"}"), KeystoreError::NotAWallet { .. }));
        assert!(matches!(check("[]"), KeystoreError::NotAWallet { .. }));
        assert!(
            matches!(check(&good.replace("\"version\": 1", "\"version\": 2")), KeystoreError::UnsupportedVersion { found, .. } if found == "2")
        );
        let e = check(&good.replace("\"m_cost_kib\": 64", "\"m_cost_kib\": 4294967295"));
        assert!(matches!(&e, KeystoreError::Corrupt { field, .. } if field == "kdf"), "{e}");
        let e = check(&good.replace("argon2id", "scrypt"));
        assert!(matches!(&e, KeystoreError::Corrupt { field, .. } if field == "kdf.algorithm"), "{e}");
        let e = check(&good.replace("\"salt\": \"", "\"salt\": \"00"));
        assert!(matches!(&e, KeystoreError::Corrupt { field, .. } if field == "kdf.salt"), "{e}");
        let e = check(&good.replace("\"nonce\": \"", "\"nonce\": \"zz"));
        assert!(matches!(&e, KeystoreError::Corrupt { field, .. } if field == "cipher.nonce"), "{e}");
        let e = check(&good.replace("\"ciphertext\": \"", "\"ciphertext\": \"q"));
        assert!(matches!(&e, KeystoreError::Corrupt { field, .. } if field == "ciphertext"), "{e}");
        let e = check(&good.replace("\"format\"", "\"extra\": 1, \"format\""));
        assert!(matches!(&e, KeystoreError::Corrupt { field, .. } if field == "file"), "{e}");
    }

    #[test]
    fn kdf_bounds() {
        assert!(KdfParams::DEFAULT.check().is_ok());
        assert!(KdfParams::INSECURE_FAST.check().is_ok());
        for bad in [
            KdfParams { m_cost_kib: 7, t_cost: 1, p_cost: 1 },
            KdfParams { m_cost_kib: 64, t_cost: 0, p_cost: 1 },
            KdfParams { m_cost_kib: 64, t_cost: 1, p_cost: 0 },
            KdfParams { m_cost_kib: 64, t_cost: 1, p_cost: 9 },
            KdfParams { m_cost_kib: KdfParams::MAX_M_COST_KIB + 1, t_cost: 1, p_cost: 1 },
            KdfParams { m_cost_kib: 64, t_cost: KdfParams::MAX_T_COST + 1, p_cost: 1 },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn atomic_write_modes_and_no_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.json");
        write_atomic(&p, b"one", false).unwrap();
        assert!(matches!(write_atomic(&p, b"two", false), Err(KeystoreError::AlreadyExists { .. })));
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        write_atomic(&p, b"two", true).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("w.json")], "no temporary file is left");
        let e = write_atomic(&dir.path().join("missing-dir").join("w.json"), b"x", false).unwrap_err();
        assert!(matches!(e, KeystoreError::Io { op: "creating", .. }), "{e}");
    }

    #[test]
    fn oversized_files_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.json");
        let f = File::create(&p).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        assert!(matches!(read_bounded(&p), Err(KeystoreError::TooLarge { .. })));
        assert!(matches!(
            read_bounded(&dir.path().join("none")),
            Err(KeystoreError::Io { op: "opening", .. })
        ));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

        #[test]
        fn sealed_files_round_trip(
            plaintext in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            salt in proptest::prelude::any::<[u8; SALT_LEN]>(),
        ) {
            let pass = Passphrase::from("pw");
            let key = derive_key(&pass, &KdfParams::INSECURE_FAST, &salt).unwrap();
            let bytes = seal(&key, KdfParams::INSECURE_FAST, salt, &plaintext).unwrap();
            let opened = unseal(Path::new("w"), &bytes, &pass).unwrap();
            proptest::prop_assert_eq!(&opened.plaintext[..], &plaintext[..]);
            proptest::prop_assert_eq!(opened.header.salt, salt);
            proptest::prop_assert_eq!(&opened.key[..], &key[..]);
        }

        #[test]
        fn envelope_parsing_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = parse_envelope(Path::new("w"), &bytes);
        }
    }
}
