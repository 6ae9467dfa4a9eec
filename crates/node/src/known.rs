//! The persisted peer book (seed 000 §2.2.1: "the peer information is persisted"): the peers
//! a node has known — their listen addresses, when they were last seen, their score and ban —
//! kept in `DATA_DIR/peers.json` and loaded at the next start, when the node dials them again
//! (and the bootstrap nodes besides, which discovery still needs).
//!
//! Bounded: at most [`MAX_PEERS`] peers (the least recently seen forgotten first), at most
//! [`MAX_ADDRS`] addresses each, a file of at most [`MAX_FILE_BYTES`] read. Written atomically
//! (a temporary file, synced, then renamed). A file that cannot be read or parsed is reported
//! and ignored: the node starts with an empty book and overwrites it at the next save.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use scalechain_p2p::net::{self, Multiaddr, PeerId};
use serde::{Deserialize, Serialize};

/// Most peers the book keeps.
pub const MAX_PEERS: usize = 1_000;
/// Most addresses kept per peer.
pub const MAX_ADDRS: usize = 8;
/// Largest file read, bytes.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// The file's format version.
pub const VERSION: u32 = 1;

/// What the book knows of one peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownPeer {
    /// Addresses it listens on (without the `/p2p/<id>` suffix).
    pub addrs: Vec<String>,
    /// When it was last connected, ms since the Unix epoch.
    pub last_seen_ms: u64,
    /// Its score after its last penalty (0 is good; bans happen at -100).
    pub score: i32,
    /// When its ban ends, if it is banned.
    pub banned_until_ms: Option<u64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    peers: BTreeMap<String, KnownPeer>,
}

/// Why the book's file was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    /// It could not be read.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// It is larger than [`MAX_FILE_BYTES`].
    #[error("{path} holds {size} bytes, more than the {MAX_FILE_BYTES} a peer book may")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// It is not a peer book.
    #[error("{path} is not a peer book: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
}

/// The known peers (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownPeers {
    peers: BTreeMap<PeerId, KnownPeer>,
    dirty: bool,
}

/// Keeps the dialable TCP addresses among `addrs`, without `/p2p/` suffixes, at most
/// [`MAX_ADDRS`].
fn dialable(addrs: &[Multiaddr]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in addrs {
        let bare = net::strip_peer(a);
        let tcp = net::tcp_port(&bare).is_some_and(|port| port != 0);
        let unspecified = net::ip_of(&bare).is_none_or(|ip| ip.is_unspecified());
        let s = bare.to_string();
        if tcp && !unspecified && !out.contains(&s) && out.len() < MAX_ADDRS {
            out.push(s);
        }
    }
    out
}

impl KnownPeers {
    /// An empty book.
    pub fn new() -> KnownPeers {
        KnownPeers::default()
    }

    /// Every peer known, in peer order.
    pub fn iter(&self) -> impl Iterator<Item = (&PeerId, &KnownPeer)> + '_ {
        self.peers.iter()
    }

    /// Changed since the last save?
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    fn entry(&mut self, peer: PeerId, now_ms: u64) -> &mut KnownPeer {
        if !self.peers.contains_key(&peer) && self.peers.len() >= MAX_PEERS {
            let oldest = self.peers.iter().min_by_key(|(_, p)| p.last_seen_ms).map(|(k, _)| *k);
            if let Some(k) = oldest {
                self.peers.remove(&k);
            }
        }
        self.dirty = true;
        self.peers.entry(peer).or_insert(KnownPeer {
            addrs: Vec::new(),
            last_seen_ms: now_ms,
            score: 0,
            banned_until_ms: None,
        })
    }

    /// The peer told us where it listens (identify); it is connected now.
    pub fn listens(&mut self, peer: PeerId, addrs: &[Multiaddr], now_ms: u64) {
        let addrs = dialable(addrs);
        if addrs.is_empty() && !self.peers.contains_key(&peer) {
            return;
        }
        let e = self.entry(peer, now_ms);
        if !addrs.is_empty() {
            e.addrs = addrs;
        }
        e.last_seen_ms = now_ms;
    }

    /// The peer is (or was until now) connected.
    pub fn seen(&mut self, peer: &PeerId, now_ms: u64) {
        if let Some(e) = self.peers.get_mut(peer) {
            e.last_seen_ms = now_ms;
            self.dirty = true;
        }
    }

    /// The peer's score changed.
    pub fn scored(&mut self, peer: PeerId, score: i32, now_ms: u64) {
        self.entry(peer, now_ms).score = score;
    }

    /// The peer is banned until `until_ms`.
    pub fn banned(&mut self, peer: PeerId, until_ms: u64, now_ms: u64) {
        let e = self.entry(peer, now_ms);
        e.banned_until_ms = Some(until_ms);
        e.score = -scalechain_p2p::score::BAN_SCORE;
    }

    /// Addresses to dial at start: of the peers not banned at `now_ms`, the `n` seen most
    /// recently, each address with its `/p2p/<id>` suffix.
    pub fn to_dial(&self, now_ms: u64, n: usize) -> Vec<Multiaddr> {
        self.dialable(now_ms)
            .into_iter()
            .take(n)
            .flat_map(|(k, addrs)| addrs.into_iter().map(move |a| net::with_peer(a, k)))
            .collect()
    }

    /// The peers not banned at `now_ms` that have an address, seen most recently first, with
    /// their addresses (without the `/p2p/<id>` suffix).
    pub fn dialable(&self, now_ms: u64) -> Vec<(PeerId, Vec<Multiaddr>)> {
        let mut peers: Vec<(&PeerId, &KnownPeer)> = self
            .peers
            .iter()
            .filter(|(_, p)| p.banned_until_ms.is_none_or(|u| u <= now_ms) && !p.addrs.is_empty())
            .collect();
        peers.sort_by_key(|(k, p)| (std::cmp::Reverse(p.last_seen_ms), **k));
        peers
            .into_iter()
            .map(|(k, p)| (*k, p.addrs.iter().filter_map(|a| a.parse().ok()).collect()))
            .collect()
    }

    /// The book as its file's text.
    pub fn encode(&self) -> String {
        let file = File {
            version: VERSION,
            peers: self.peers.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        };
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }

    /// A book from its file's text: the version must match, every peer id must parse; bounds
    /// are applied (the most recently seen peers and the first addresses kept).
    pub fn decode(text: &str) -> Result<KnownPeers, String> {
        let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.version != VERSION {
            return Err(format!("format version {}, this node reads {VERSION}", file.version));
        }
        let mut peers: Vec<(PeerId, KnownPeer)> = file
            .peers
            .into_iter()
            .map(|(k, mut v)| {
                let id: PeerId = k.parse().map_err(|e| format!("peer id {k:?}: {e}"))?;
                v.addrs.truncate(MAX_ADDRS);
                Ok((id, v))
            })
            .collect::<Result<_, String>>()?;
        peers.sort_by_key(|(k, p)| (std::cmp::Reverse(p.last_seen_ms), *k));
        peers.truncate(MAX_PEERS);
        Ok(KnownPeers { peers: peers.into_iter().collect(), dirty: false })
    }

    /// Loads `path`; a missing file is an empty book.
    pub fn load(path: &Path) -> Result<KnownPeers, BookError> {
        let bytes = match read_bounded(path, MAX_FILE_BYTES) {
            Ok(Bounded::Read(b)) => b,
            Ok(Bounded::Missing) => return Ok(KnownPeers::new()),
            Ok(Bounded::TooLarge(size)) => {
                return Err(BookError::TooLarge { path: path.to_path_buf(), size })
            }
            Err(e) => return Err(BookError::Io { path: path.to_path_buf(), reason: e.to_string() }),
        };
        let text = std::str::from_utf8(&bytes)
            .map_err(|e| BookError::Corrupt { path: path.to_path_buf(), reason: e.to_string() })?;
        KnownPeers::decode(text).map_err(|reason| BookError::Corrupt { path: path.to_path_buf(), reason })
    }

    /// Writes the book to `path` atomically (temporary file, sync, rename) and marks it clean.
    pub fn save(&mut self, path: &Path) -> std::io::Result<()> {
        write_atomic(path, self.encode().as_bytes())?;
        self.dirty = false;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it (`.tmp` appended to the
/// extension), synced, then renamed over `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let ext = path.extension().map_or("tmp".to_string(), |e| format!("{}.tmp", e.to_string_lossy()));
    let tmp = path.with_extension(ext);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// A state file read back: absent, too large, or its bytes.
pub(crate) enum Bounded {
    /// There is no file.
    Missing,
    /// It holds more than the limit (its size, or at least the limit plus one if it grew while
    /// being read).
    TooLarge(u64),
    /// Its bytes.
    Read(Vec<u8>),
}

/// Reads `path` if it exists and holds at most `max` bytes, never reading more than `max + 1`
/// (a file that grows while it is read is still bounded).
pub(crate) fn read_bounded(path: &Path, max: u64) -> std::io::Result<Bounded> {
    use std::io::Read;
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Bounded::Missing),
        Err(e) => return Err(e),
    };
    let size = f.metadata()?.len();
    if size > max {
        return Ok(Bounded::TooLarge(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    f.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Bounded::TooLarge(bytes.len() as u64));
    }
    Ok(Bounded::Read(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_state_file_is_read_back_only_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        assert!(matches!(read_bounded(&path, 4).unwrap(), Bounded::Missing));
        std::fs::write(&path, b"1234").unwrap();
        assert!(matches!(read_bounded(&path, 4).unwrap(), Bounded::Read(b) if b == b"1234"));
        std::fs::write(&path, b"12345").unwrap();
        assert!(matches!(read_bounded(&path, 4).unwrap(), Bounded::TooLarge(5)));
        // A directory where the file should be is an error, not "missing".
        assert!(read_bounded(dir.path(), 1 << 20).is_err());
    }

    fn key(i: u8) -> PeerId {
        net::peer_id_of_seed([i; 32]).unwrap()
    }

    fn addr(port: u16) -> Multiaddr {
        format!("/ip4/10.0.0.1/tcp/{port}").parse().unwrap()
    }

    #[test]
    fn addresses_peers_and_the_dial_list_are_bounded_and_banned_peers_left_out() {
        let mut b = KnownPeers::new();
        let many: Vec<Multiaddr> = (1..20).map(addr).collect();
        b.listens(key(1), &many, 10);
        assert_eq!(b.peers.get(&key(1)).unwrap().addrs.len(), MAX_ADDRS);
        // Unspecified, port-0 and non-TCP addresses are not dialable; a peer with none is not
        // recorded.
        let useless: Vec<Multiaddr> = ["/ip4/0.0.0.0/tcp/5", "/ip4/10.0.0.2/tcp/0", "/ip4/10.0.0.2/udp/5"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        b.listens(key(2), &useless, 10);
        assert!(!b.peers.contains_key(&key(2)));
        b.listens(key(3), &[addr(7)], 30);
        b.listens(key(4), &[addr(8)], 20);
        b.banned(key(4), 1_000, 25);
        let dial = b.to_dial(500, 10);
        assert_eq!(dial[0], net::with_peer(addr(7), key(3)));
        assert_eq!(dial.len(), 1 + MAX_ADDRS, "peer 4 is banned until 1000");
        assert!(b.to_dial(1_000, 10).contains(&net::with_peer(addr(8), key(4))), "the ban ended");
        for i in 0..(MAX_PEERS as u16 + 5) {
            let mut seed = [9u8; 32];
            seed[..2].copy_from_slice(&i.to_le_bytes());
            let p = net::peer_id_of_seed(seed).unwrap();
            b.listens(p, &[addr(9)], 100 + u64::from(i));
        }
        assert_eq!(b.peers.len(), MAX_PEERS);
        assert!(!b.peers.contains_key(&key(1)), "the least recently seen are forgotten first");
    }

    #[test]
    fn the_file_round_trips_atomically_and_a_corrupt_one_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peers.json");
        assert!(KnownPeers::load(&path).unwrap().peers.is_empty());
        let mut b = KnownPeers::new();
        b.listens(key(1), &[addr(1)], 5);
        b.scored(key(1), -30, 6);
        assert!(b.is_dirty());
        b.save(&path).unwrap();
        assert!(!b.is_dirty() && !path.with_extension("json.tmp").exists());
        assert_eq!(KnownPeers::load(&path).unwrap(), b);
        for junk in ["{", "{\"version\":2,\"peers\":{}}", "{\"version\":1,\"peers\":{\"nope\":{\"addrs\":[],\"last_seen_ms\":1,\"score\":0,\"banned_until_ms\":null}}}"] {
            std::fs::write(&path, junk).unwrap();
            let e = KnownPeers::load(&path).unwrap_err();
            assert!(matches!(e, BookError::Corrupt { .. }), "{e}");
            assert!(e.to_string().contains("peers.json"), "{e}");
        }
        std::fs::write(&path, vec![b' '; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert!(matches!(KnownPeers::load(&path).unwrap_err(), BookError::TooLarge { .. }));
    }
}
