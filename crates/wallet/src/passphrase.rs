//! Passphrases, and reading them from where scripts keep them: an environment variable or the
//! first line of a file.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use zeroize::{Zeroize, Zeroizing};

/// The longest passphrase accepted from a source, in bytes.
pub const MAX_PASSPHRASE_LEN: usize = 4096;

/// A passphrase. Its bytes are zeroized when it is dropped, and `Debug` never shows them.
#[derive(Clone)]
pub struct Passphrase(Zeroizing<String>);

impl Passphrase {
    /// A passphrase from a string (taken over, not copied).
    pub fn new(s: String) -> Passphrase {
        Passphrase(Zeroizing::new(s))
    }

    /// The passphrase bytes (UTF-8).
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads the passphrase from the environment variable `var`.
    pub fn from_env(var: &str) -> Result<Passphrase, PassphraseError> {
        let value = match std::env::var(var) {
            Ok(v) => v,
            Err(std::env::VarError::NotPresent) => {
                return Err(PassphraseError::EnvMissing { var: var.to_string() })
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(PassphraseError::EnvNotUnicode { var: var.to_string() });
            }
        };
        let p = Passphrase::new(value);
        if p.is_empty() {
            return Err(PassphraseError::Empty { origin: format!("environment variable {var}") });
        }
        if p.as_bytes().len() > MAX_PASSPHRASE_LEN {
            return Err(PassphraseError::TooLong {
                origin: format!("environment variable {var}"),
                max: MAX_PASSPHRASE_LEN,
            });
        }
        Ok(p)
    }

    /// Reads the passphrase from the first line of the file at `path`; the line ends at the first
    /// `\n`, and a `\r` before it is dropped too. At most [`MAX_PASSPHRASE_LEN`] bytes are read
    /// for the line.
    pub fn from_file(path: &Path) -> Result<Passphrase, PassphraseError> {
        let io = |source| PassphraseError::File { path: path.to_path_buf(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        // One byte more than the longest line and its "\r\n" tells a too-long line apart.
        let mut buf = Zeroizing::new(Vec::with_capacity(MAX_PASSPHRASE_LEN + 3));
        file.take(MAX_PASSPHRASE_LEN as u64 + 3).read_to_end(&mut buf).map_err(io)?;
        let line_end = buf.iter().position(|&b| b == b'\n');
        let mut line_len = line_end.unwrap_or(buf.len());
        if line_end.is_some() && line_len > 0 && buf[line_len - 1] == b'\r' {
            line_len -= 1;
        }
        let source = || format!("file {}", path.display());
        if line_len > MAX_PASSPHRASE_LEN {
            return Err(PassphraseError::TooLong { origin: source(), max: MAX_PASSPHRASE_LEN });
        }
        if line_len == 0 {
            return Err(PassphraseError::Empty { origin: source() });
        }
        let mut line = Vec::with_capacity(line_len);
        line.extend_from_slice(&buf[..line_len]);
        match String::from_utf8(line) {
            Ok(s) => Ok(Passphrase::new(s)),
            Err(e) => {
                let mut bytes = e.into_bytes();
                bytes.zeroize();
                Err(PassphraseError::FileNotUnicode { path: path.to_path_buf() })
            }
        }
    }
}

impl From<&str> for Passphrase {
    fn from(s: &str) -> Passphrase {
        Passphrase::new(s.to_string())
    }
}

impl fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Passphrase(<redacted>)")
    }
}

/// Where a script keeps the passphrase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassphraseSource {
    /// The environment variable of this name.
    Env(String),
    /// The first line of this file.
    File(PathBuf),
}

impl PassphraseSource {
    /// Reads the passphrase.
    pub fn read(&self) -> Result<Passphrase, PassphraseError> {
        match self {
            PassphraseSource::Env(var) => Passphrase::from_env(var),
            PassphraseSource::File(path) => Passphrase::from_file(path),
        }
    }
}

/// Why no passphrase could be read.
#[derive(Debug, thiserror::Error)]
pub enum PassphraseError {
    /// The environment variable is not set.
    #[error("environment variable {var} holding the passphrase is not set")]
    EnvMissing {
        /// The variable's name.
        var: String,
    },
    /// The environment variable is not valid Unicode.
    #[error("environment variable {var} holding the passphrase is not valid UTF-8")]
    EnvNotUnicode {
        /// The variable's name.
        var: String,
    },
    /// The passphrase file could not be read.
    #[error("reading the passphrase file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// The passphrase file's first line is not valid UTF-8.
    #[error("the first line of the passphrase file {path} is not valid UTF-8")]
    FileNotUnicode {
        /// The file.
        path: PathBuf,
    },
    /// The source holds an empty passphrase.
    #[error("the passphrase in {origin} is empty")]
    Empty {
        /// Where it was read from.
        origin: String,
    },
    /// The passphrase is longer than [`MAX_PASSPHRASE_LEN`].
    #[error("the passphrase in {origin} is longer than {max} bytes")]
    TooLong {
        /// Where it was read from.
        origin: String,
        /// The limit.
        max: usize,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn file_first_line_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pass");
        for (content, want) in [
            ("hunter2\n", "hunter2"),
            ("hunter2", "hunter2"),
            ("hunter2\r\nsecond line\n", "hunter2"),
            ("  spaced  \n", "  spaced  "),
        ] {
            std::fs::write(&p, content).unwrap();
            assert_eq!(Passphrase::from_file(&p).unwrap().as_bytes(), want.as_bytes(), "{content:?}");
        }
        std::fs::write(&p, "\nsecond").unwrap();
        assert!(matches!(Passphrase::from_file(&p), Err(PassphraseError::Empty { .. })));
        std::fs::write(&p, [0xff, 0xfe, b'\n']).unwrap();
        assert!(matches!(Passphrase::from_file(&p), Err(PassphraseError::FileNotUnicode { .. })));
        std::fs::write(&p, "x".repeat(MAX_PASSPHRASE_LEN + 1)).unwrap();
        assert!(matches!(Passphrase::from_file(&p), Err(PassphraseError::TooLong { .. })));
        std::fs::write(&p, format!("{}\r\n", "x".repeat(MAX_PASSPHRASE_LEN))).unwrap();
        assert_eq!(Passphrase::from_file(&p).unwrap().as_bytes().len(), MAX_PASSPHRASE_LEN);
        let missing = dir.path().join("missing");
        let e = PassphraseSource::File(missing.clone()).read().unwrap_err();
        assert!(matches!(&e, PassphraseError::File { path, .. } if *path == missing));
        assert!(e.to_string().contains("missing"), "{e}");
    }

    #[test]
    fn env_source() {
        let var = "SCALECHAIN_WALLET_TEST_PASSPHRASE_UNSET_7f3a";
        let e = PassphraseSource::Env(var.into()).read().unwrap_err();
        assert!(matches!(e, PassphraseError::EnvMissing { .. }));
        assert!(e.to_string().contains(var));
        // Reading a variable that is set: PATH exists in every test environment.
        if std::env::var("PATH").is_ok_and(|v| !v.is_empty() && v.len() <= MAX_PASSPHRASE_LEN) {
            assert!(Passphrase::from_env("PATH").is_ok());
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let p = Passphrase::from("correct horse");
        assert!(!format!("{p:?}").contains("horse"));
    }
}
