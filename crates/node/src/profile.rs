//! The node's side of the function profiler (`scalechain_types::profile`, seed 001's): the
//! statistics as the API shows them ([`ProfileJson`]), kept in `DATA_DIR/profile.json` and
//! merged back at the next start, so they persist across restarts as seed 001's did.
//!
//! The file is the `GET /profile` document. One that cannot be read, is too large or does not
//! hold well-formed statistics is reported and ignored (the node starts with none, and the next
//! save overwrites it); nothing in it can make the node panic.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use scalechain_client::types::{CentredJson, ProfileJson, ProfilePath};
use scalechain_types::profile::{self, Centred, SpanStats, CENTRED_SIDE, HISTOGRAM_BUCKETS};

/// The file in the data directory.
pub const FILE: &str = "profile.json";
/// Largest file read back.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// Most call paths read back.
pub const MAX_PATHS: usize = 10_000;
/// Longest call path read back, bytes.
pub const MAX_PATH_BYTES: usize = 1_024;

/// The profiler's persistence for one node.
#[derive(Debug)]
pub struct Persisted {
    path: PathBuf,
    /// Starts that merged earlier statistics back.
    restarts: AtomicU64,
    /// Serialises writes of the file.
    writing: Mutex<()>,
}

impl Persisted {
    /// Reads `DATA_DIR/profile.json` if there is one and merges it into the profiler. A file it
    /// cannot use is reported (a warning) and ignored.
    pub fn open(data_dir: &Path) -> Persisted {
        let path = data_dir.join(FILE);
        let restarts = match read(&path) {
            Ok(None) => 0,
            Ok(Some(doc)) => {
                for p in &doc.paths {
                    if let Some(s) = stats_of(p) {
                        profile::merge(p.path.clone(), &s);
                    }
                }
                profile::add_recorded(Duration::from_secs_f64(doc.recorded_s));
                tracing::info!(
                    "profile: {} call paths, {:.0} s recorded, merged back from {}",
                    doc.paths.len(),
                    doc.recorded_s,
                    path.display()
                );
                doc.restarts.saturating_add(1)
            }
            Err(e) => {
                tracing::warn!("profile: {}: {e}; starting without the earlier statistics", path.display());
                0
            }
        };
        Persisted { path, restarts: AtomicU64::new(restarts), writing: Mutex::new(()) }
    }

    /// The profile now: paths after `after` in path order, at most `limit`.
    pub fn document(&self, after: Option<&str>, limit: usize) -> ProfileJson {
        let snap = profile::snapshot();
        let mut rest = snap.iter().filter(|(p, _)| after.is_none_or(|a| p.as_str() > a));
        let paths: Vec<ProfilePath> = rest.by_ref().take(limit).map(|(p, s)| path_json(p, s)).collect();
        ProfileJson {
            enabled: profile::enabled(),
            recorded_s: profile::recorded().as_secs_f64(),
            restarts: self.restarts.load(Ordering::Relaxed),
            paths,
            more: rest.next().is_some(),
        }
    }

    /// Writes the whole profile to the file (atomically).
    pub fn save(&self) -> std::io::Result<()> {
        let _w = self.writing.lock();
        let doc = self.document(None, usize::MAX);
        let text = serde_json::to_string(&doc).map_err(std::io::Error::other)?;
        crate::known::write_atomic(&self.path, text.as_bytes())
    }

    /// Forgets every statistic, in memory and in the file.
    pub fn reset(&self) -> std::io::Result<()> {
        profile::reset();
        self.restarts.store(0, Ordering::Relaxed);
        self.save()
    }
}

/// The API's form of one path's statistics.
pub fn path_json(path: &str, s: &SpanStats) -> ProfilePath {
    ProfilePath {
        path: path.to_string(),
        count: s.count,
        total_ns: s.total_ns,
        exclusive_ns: s.exclusive_ns,
        max_ns: s.max_ns,
        log2: s.histogram.to_vec(),
        centred: s.centred.as_ref().map(|c| CentredJson {
            centre_ns: c.centre_ns,
            width_ns: c.width_ns,
            buckets: c.buckets.clone(),
            under: c.under,
            over: c.over,
        }),
    }
}

/// Statistics back from their API form, if well formed: histograms of the right lengths, a
/// positive bucket width, sums that do not exceed the totals.
pub fn stats_of(p: &ProfilePath) -> Option<SpanStats> {
    let histogram: [u64; HISTOGRAM_BUCKETS] = p.log2.as_slice().try_into().ok()?;
    let sum = histogram.iter().try_fold(0u64, |a, b| a.checked_add(*b))?;
    if sum != p.count || p.exclusive_ns > p.total_ns || p.max_ns > p.total_ns {
        return None;
    }
    let centred = match &p.centred {
        None => None,
        Some(c) => {
            if c.width_ns == 0 || c.buckets.len() != 2 * CENTRED_SIDE {
                return None;
            }
            Some(Centred {
                centre_ns: c.centre_ns,
                width_ns: c.width_ns,
                buckets: c.buckets.clone(),
                under: c.under,
                over: c.over,
            })
        }
    };
    Some(SpanStats {
        count: p.count,
        total_ns: p.total_ns,
        exclusive_ns: p.exclusive_ns,
        max_ns: p.max_ns,
        histogram,
        centred,
    })
}

/// Why a persisted profile was not used.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    /// It is larger than [`MAX_FILE_BYTES`].
    #[error("{0} bytes, more than the {MAX_FILE_BYTES} read back")]
    TooLarge(u64),
    /// It is not a profile document.
    #[error("not a profile document: {0}")]
    Malformed(String),
    /// A path's statistics are not well formed.
    #[error("call path {index} ({path:?}): statistics not well formed")]
    BadPath {
        /// Its position in the file.
        index: usize,
        /// The path (cut to 64 bytes).
        path: String,
    },
}

/// The document in `path`, `None` if there is no file.
pub fn read(path: &Path) -> Result<Option<ProfileJson>, ReadError> {
    use crate::known::Bounded;
    let bytes = match crate::known::read_bounded(path, MAX_FILE_BYTES)? {
        Bounded::Read(b) => b,
        Bounded::Missing => return Ok(None),
        Bounded::TooLarge(size) => return Err(ReadError::TooLarge(size)),
    };
    let doc: ProfileJson = scalechain_client::ops::decode_json(&bytes).map_err(ReadError::Malformed)?;
    if doc.paths.len() > MAX_PATHS {
        return Err(ReadError::Malformed(format!("{} call paths, at most {MAX_PATHS}", doc.paths.len())));
    }
    if !doc.recorded_s.is_finite() || doc.recorded_s < 0.0 || doc.recorded_s > 1e12 {
        return Err(ReadError::Malformed(format!("recorded_s = {}", doc.recorded_s)));
    }
    for (index, p) in doc.paths.iter().enumerate() {
        if p.path.is_empty() || p.path.len() > MAX_PATH_BYTES || stats_of(p).is_none() {
            let cut: String = p.path.chars().take(64).collect();
            return Err(ReadError::BadPath { index, path: cut });
        }
    }
    Ok(Some(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SpanStats {
        let mut s = SpanStats {
            count: 150,
            total_ns: 150_000,
            exclusive_ns: 90_000,
            max_ns: 5_000,
            ..Default::default()
        };
        s.histogram[9] = 150;
        let mut c = Centred::around(1_000);
        c.buckets[CENTRED_SIDE] = 40;
        c.over = 10;
        s.centred = Some(c);
        s
    }

    #[test]
    fn statistics_round_trip_through_their_api_form() {
        let s = sample();
        assert_eq!(stats_of(&path_json("a -> b", &s)), Some(s));
    }

    #[test]
    fn ill_formed_statistics_are_refused() {
        let good = path_json("a", &sample());
        let bad = [
            ProfilePath { log2: vec![0; 3], ..good.clone() },
            ProfilePath { count: 151, ..good.clone() },
            ProfilePath { exclusive_ns: good.total_ns + 1, ..good.clone() },
            ProfilePath {
                centred: Some(CentredJson { width_ns: 0, ..good.centred.clone().unwrap() }),
                ..good.clone()
            },
            ProfilePath {
                centred: Some(CentredJson { buckets: vec![1; 7], ..good.centred.clone().unwrap() }),
                ..good.clone()
            },
        ];
        for b in bad {
            assert_eq!(stats_of(&b), None, "{b:?}");
        }
    }

    #[test]
    fn unusable_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert!(read(&path).unwrap().is_none(), "no file, no profile");
        let doc = |paths: Vec<ProfilePath>| {
            serde_json::to_string(&ProfileJson {
                enabled: false,
                recorded_s: 5.0,
                restarts: 1,
                paths,
                more: false,
            })
            .unwrap()
        };
        std::fs::write(&path, doc(vec![path_json("a", &sample())])).unwrap();
        assert_eq!(read(&path).unwrap().unwrap().paths.len(), 1);
        let cases = [
            ("{\"enabled\": true".to_string(), "not a profile document"),
            ("[1, 2]".to_string(), "not a profile document"),
            (doc(vec![ProfilePath { count: 3, ..path_json("a", &sample()) }]), "call path 0 (\"a\")"),
            (doc(vec![path_json("", &sample())]), "call path 0"),
        ];
        for (text, want) in cases {
            std::fs::write(&path, &text).unwrap();
            let e = read(&path).unwrap_err().to_string();
            assert!(e.contains(want), "{e} (for {text:.40})");
        }
        std::fs::write(&path, vec![b' '; (MAX_FILE_BYTES + 1) as usize]).unwrap();
        assert!(matches!(read(&path), Err(ReadError::TooLarge(_))));
    }
}
