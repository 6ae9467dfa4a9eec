//! The process's file descriptors: at start the soft limit is raised to the hard one (as
//! Bitcoin Core does; a soft limit of 1,024 is a common default and would let a crowd of idle
//! API clients starve everything else), and what is there is budgeted between the peer-to-peer
//! sockets, the store, the rest of the process and the API, which takes what is left (at most
//! `api.max_connections`). The budget is logged.

/// Descriptors kept for the store's files (tables, journals, the marker and snapshot files).
pub const STORE_FDS: u64 = 256;
/// Descriptors kept for everything else: standard streams, the runtime's event queue and
/// wakers, threads, the data directory's small files.
pub const OTHER_FDS: u64 = 128;

/// The open-file limits before and after [`raise`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The soft limit found at start (`None`: unlimited).
    pub before: Option<u64>,
    /// The soft limit in force (`None`: unlimited).
    pub soft: Option<u64>,
    /// The hard limit (`None`: unlimited).
    pub hard: Option<u64>,
}

/// Raises the soft open-file limit to the hard one (where there is no hard limit, to
/// 1,048,576, the kernel's usual ceiling); a refusal leaves it as it was.
pub fn raise() -> Limits {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let l = getrlimit(Resource::Nofile);
    let before = l.current;
    let target = l.maximum.unwrap_or(1 << 20);
    if before.is_some_and(|s| s < target) {
        let _ = setrlimit(Resource::Nofile, Rlimit { current: Some(target), maximum: l.maximum });
    }
    let now = getrlimit(Resource::Nofile);
    Limits { before, soft: now.current, hard: now.maximum }
}

/// How the descriptors are shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Peer-to-peer sockets: established connections and the room past them, and those being
    /// set up.
    pub p2p: u64,
    /// The store's files.
    pub store: u64,
    /// The rest of the process.
    pub other: u64,
    /// API connections served at once.
    pub api: usize,
}

/// The budget of a soft limit `soft` (`None`: unlimited) for `p2p` peer-to-peer sockets and at
/// most `api_max` API connections: the API gets what the others leave, and at least a quarter
/// of the limit (and 1) when they would leave less.
pub fn budget(soft: Option<u64>, p2p: u64, api_max: usize) -> Budget {
    let api = match soft {
        None => api_max,
        Some(limit) => {
            let left = limit.saturating_sub(p2p + STORE_FDS + OTHER_FDS).max(limit / 4);
            usize::try_from(left).unwrap_or(usize::MAX).min(api_max)
        }
    };
    Budget { p2p, store: STORE_FDS, other: OTHER_FDS, api: api.max(1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_gets_what_the_others_leave_within_its_setting() {
        let b = budget(Some(20_000), 208, 16_384);
        assert_eq!(b.api, 16_384);
        let b = budget(Some(1_024), 208, 16_384);
        assert_eq!(b.api, 1_024 - 208 - STORE_FDS as usize - OTHER_FDS as usize);
        // A tiny limit still leaves the API a quarter.
        assert_eq!(budget(Some(256), 208, 16_384).api, 64);
        assert_eq!(budget(Some(0), 208, 16_384).api, 1);
        assert_eq!(budget(None, 208, 100).api, 100);
    }

    #[test]
    fn raising_never_lowers_the_limit() {
        let l = raise();
        assert!(l.soft >= l.before || l.soft.is_none());
        assert_eq!(l.soft, raise().soft);
    }
}
