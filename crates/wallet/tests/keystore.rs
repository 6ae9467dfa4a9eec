//! The wallet file: create, open, keys, backup and restore, passphrase changes, and every way a
//! file can be wrong.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use scalechain_types::{HashKind, Scheme};
use scalechain_wallet::*;

const FAST: KdfParams = KdfParams::INSECURE_FAST;

fn pass(s: &str) -> Passphrase {
    Passphrase::from(s)
}

fn addresses(w: &Wallet) -> Vec<String> {
    w.addresses(HashKind::Sha256, &AddressHrp::devnet()).iter().map(|a| a.to_string()).collect()
}

fn new_wallet(dir: &Path) -> (PathBuf, Wallet) {
    let path = dir.join("wallet.json");
    let mut w = Wallet::create(&path, &pass("correct horse"), FAST).unwrap();
    w.new_key(Scheme::Ed25519).unwrap();
    w.new_key(Scheme::Secp256k1).unwrap();
    w.new_key(Scheme::Ed25519).unwrap();
    (path, w)
}

#[test]
fn create_then_open_gives_the_same_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (path, w) = new_wallet(dir.path());
    let ids: Vec<String> = w.keys().iter().map(|k| k.id.to_string()).collect();
    assert_eq!(ids, ["ed25519/0", "ed25519/1", "secp256k1/0"]);
    assert_eq!(w.derived_count(Scheme::Ed25519), 2);

    let again = Wallet::open(&path, &pass("correct horse")).unwrap();
    assert_eq!(again.keys(), w.keys());
    assert_eq!(addresses(&again), addresses(&w));
    assert_eq!(again.master_seed(), w.master_seed());
    assert_eq!(again.kdf_params(), FAST);
    for a in addresses(&w) {
        assert!(a.starts_with("scdev1"), "{a}");
    }

    // The file is JSON with the documented header, and holds no secret in the clear.
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["format"], "scalechain-wallet");
    assert_eq!(json["version"], 1);
    assert_eq!(json["kdf"]["algorithm"], "argon2id");
    assert_eq!(json["kdf"]["m_cost_kib"], 64);
    assert_eq!(json["cipher"]["algorithm"], "xchacha20poly1305");
    assert!(!text.contains(&*w.master_seed().to_hex()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn wrong_passphrase_is_told_apart_from_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = new_wallet(dir.path());
    let e = Wallet::open(&path, &pass("wrong")).unwrap_err();
    assert!(matches!(e, KeystoreError::WrongPassphrase { .. }), "{e}");
    assert!(e.to_string().contains("wrong passphrase"));

    let good = std::fs::read_to_string(&path).unwrap();
    let bad = dir.path().join("bad.json");
    let open = |content: &str| {
        std::fs::write(&bad, content).unwrap();
        Wallet::open(&bad, &pass("correct horse")).unwrap_err()
    };
    assert!(matches!(open(&good[..good.len() / 2]), KeystoreError::Corrupt { .. }));
    assert!(matches!(open(""), KeystoreError::Corrupt { .. }));
    assert!(matches!(
        open("{\"format\":\"something-else\",\"version\":1}"),
        KeystoreError::NotAWallet { .. }
    ));
    let e = open(&good.replace("\"version\": 1", "\"version\": 7"));
    assert!(matches!(&e, KeystoreError::UnsupportedVersion { found, .. } if found == "7"), "{e}");
    // Flipping a ciphertext digit: authentication fails, as for a wrong passphrase.
    let ct_start = good.find("\"ciphertext\": \"").unwrap() + 15;
    let mut flipped = good.clone().into_bytes();
    flipped[ct_start] = if flipped[ct_start] == b'0' { b'1' } else { b'0' };
    let e = open(std::str::from_utf8(&flipped).unwrap());
    assert!(matches!(e, KeystoreError::WrongPassphrase { .. }), "{e}");
    // The error names the file.
    assert!(e.to_string().contains("bad.json"), "{e}");

    let e = Wallet::open(&dir.path().join("absent.json"), &pass("x")).unwrap_err();
    assert!(matches!(e, KeystoreError::Io { .. }), "{e}");
    assert!(e.to_string().contains("absent.json"));
}

#[test]
fn create_refuses_to_overwrite_or_to_use_an_empty_passphrase() {
    let dir = tempfile::tempdir().unwrap();
    let (path, w) = new_wallet(dir.path());
    let e = Wallet::create(&path, &pass("x"), FAST).unwrap_err();
    assert!(matches!(e, KeystoreError::AlreadyExists { .. }), "{e}");
    assert_eq!(addresses(&Wallet::open(&path, &pass("correct horse")).unwrap()), addresses(&w));
    let e = Wallet::create(&dir.path().join("other.json"), &pass(""), FAST).unwrap_err();
    assert!(matches!(e, KeystoreError::EmptyPassphrase));
    let weak = KdfParams { m_cost_kib: 1, t_cost: 1, p_cost: 1 };
    let e = Wallet::create(&dir.path().join("other.json"), &pass("x"), weak).unwrap_err();
    assert!(matches!(e, KeystoreError::BadKdfParams(_)));
}

#[test]
fn backup_and_restore_give_the_same_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut w) = new_wallet(dir.path());
    let imported = w.import_seed(Scheme::Secp256k1, Seed::from_bytes([42; 32])).unwrap();
    assert_eq!(imported.id, KeyId::Imported { index: 0 });
    let backup = dir.path().join("backup.json");
    w.backup(&backup).unwrap();
    assert!(matches!(w.backup(&backup), Err(KeystoreError::AlreadyExists { .. })));
    assert_ne!(std::fs::read(&backup).unwrap(), std::fs::read(&path).unwrap(), "fresh nonce");

    std::fs::remove_file(&path).unwrap();
    let e = Wallet::restore(&backup, &pass("nope"), &path).unwrap_err();
    assert!(matches!(e, KeystoreError::WrongPassphrase { .. }));
    assert!(!path.exists());
    let restored = Wallet::restore(&backup, &pass("correct horse"), &path).unwrap();
    assert_eq!(restored.path(), path);
    assert_eq!(addresses(&restored), addresses(&w));
    assert_eq!(addresses(&Wallet::open(&path, &pass("correct horse")).unwrap()), addresses(&w));
    let e = Wallet::restore(&backup, &pass("correct horse"), &path).unwrap_err();
    assert!(matches!(e, KeystoreError::AlreadyExists { .. }));
}

#[test]
fn keys_follow_from_the_master_seed() {
    let dir = tempfile::tempdir().unwrap();
    let (_, w) = new_wallet(dir.path());
    let path2 = dir.path().join("from-seed.json");
    let mut w2 =
        Wallet::create_from_master_seed(&path2, &pass("other"), FAST, w.master_seed().clone()).unwrap();
    w2.new_key(Scheme::Ed25519).unwrap();
    w2.new_key(Scheme::Ed25519).unwrap();
    w2.new_key(Scheme::Secp256k1).unwrap();
    assert_eq!(w2.keys(), w.keys());
    // Importing a seed the wallet already has adds nothing.
    let derived = scalechain_wallet::keys::derive_seed(w.master_seed(), Scheme::Ed25519, 1);
    let again = w2.import_seed(Scheme::Ed25519, derived).unwrap();
    assert_eq!(again.id, KeyId::Derived { scheme: Scheme::Ed25519, index: 1 });
    assert_eq!(w2.keys().len(), 3);
    // Another master seed, other keys.
    let mut w3 = Wallet::create_from_master_seed(
        &dir.path().join("w3.json"),
        &pass("p"),
        FAST,
        Seed::from_bytes([1; 32]),
    )
    .unwrap();
    assert_ne!(w3.new_key(Scheme::Ed25519).unwrap(), w.keys()[0]);
}

#[test]
fn change_passphrase_re_encrypts() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut w) = new_wallet(dir.path());
    let before = addresses(&w);
    let stronger = KdfParams { m_cost_kib: 256, t_cost: 2, p_cost: 1 };
    w.change_passphrase(&pass("new phrase"), stronger).unwrap();
    assert!(matches!(
        Wallet::open(&path, &pass("correct horse")),
        Err(KeystoreError::WrongPassphrase { .. })
    ));
    let w2 = Wallet::open(&path, &pass("new phrase")).unwrap();
    assert_eq!(addresses(&w2), before);
    assert_eq!(w2.kdf_params(), stronger);
    // Later changes are saved under the new passphrase.
    w.new_key(Scheme::Secp256k1).unwrap();
    assert_eq!(Wallet::open(&path, &pass("new phrase")).unwrap().keys().len(), 4);
}

#[test]
fn default_parameters_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.json");
    let mut w = Wallet::create(&path, &pass("p"), KdfParams::default()).unwrap();
    w.new_key(Scheme::Ed25519).unwrap();
    let opened = Wallet::open(&path, &pass("p")).unwrap();
    assert_eq!(opened.kdf_params(), KdfParams { m_cost_kib: 65536, t_cost: 3, p_cost: 1 });
    assert_eq!(opened.keys(), w.keys());
}

#[test]
fn passphrase_from_a_file_opens_the_wallet() {
    let dir = tempfile::tempdir().unwrap();
    let (path, w) = new_wallet(dir.path());
    let pf = dir.path().join("pass.txt");
    std::fs::write(&pf, "correct horse\n").unwrap();
    let p = PassphraseSource::File(pf).read().unwrap();
    assert_eq!(addresses(&Wallet::open(&path, &p).unwrap()), addresses(&w));
}

#[test]
fn no_temporary_files_are_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (_, mut w) = new_wallet(dir.path());
    for _ in 0..5 {
        w.new_key(Scheme::Ed25519).unwrap();
    }
    w.backup(&dir.path().join("b.json")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["b.json", "wallet.json"]);
}
