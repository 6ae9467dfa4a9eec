//! `cpu` (seed 003 Fig 5.1, seed 001 Tables 5 / 8 / 11): where a loaded node's CPU goes, by
//! category of primitive operation, and its functions' run times over minutes of load.
//!
//! Seed 003 profiled a Fabric peer with pprof under 40k voting transactions (1 read and 1 write
//! each) and broke its total time into primitive operations (signature verification 20%,
//! SHA-256 12%, serialisation 13%, ...; [`seeds::CPU_SHARES`]). Ours: a devnet of one peer and
//! one miner (seed 003 §6.1 measured "a single peer with a single orderer"), held busy through
//! the load benchmark by `fixed-load` rounds of 1-input/1-output transfers and then of ElGamal
//! ballots, while Linux `perf` samples the peer's CPU (`perf record -e cpu-clock -F 499 -g -p
//! PID`), from just before each round's offer to the end of its drain. Each sample goes to one
//! category by the table [`RULES`] (see [`classify`] for which frames count); the categories'
//! shares stand beside seed 003's, and the symbols no rule took are listed so the table can be
//! checked.
//!
//! Meanwhile the miner records its function profile (`GET /profile`) over all the rounds:
//! seed 001's long recordings with their run-time histograms, for the functions of
//! [`profile::ANALOGUES`] ([`profile::histograms`]).
//!
//! Which load is like seed 003's: its transactions were votes that each read one key and wrote one.
//! Ours are not Fabric's: a transfer reads (and spends) one unspent output and writes one, the
//! like-for-like in what it does to the state, and is what the load benchmark offers fastest; a
//! ballot is the like-for-like in what it is (a vote, signed, with the proofs of its encryption),
//! though ElGamal, not seed 003's Paillier: the load benchmark carries only a few Paillier ballots
//! a second (`load` offers them at 2 to 14 a second), and their cost is OpenSSL's bignum
//! arithmetic, which none of seed 003's categories holds.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scalechain_client::types::{CentredJson, ProfileControl, ProfilePath};
use scalechain_lab::bench::metrics::RoundResult;
use scalechain_lab::bench::run::RoundEdge;
use scalechain_lab::bench::spec::{Round, Workload};
use scalechain_lab::launcher::{signal_pid, Launcher, Sig};
use scalechain_lab::load::prepare::Shape;
use scalechain_lab::load::schedule::Rate;
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::profile::CENTRED_SIDE;
use scalechain_voting::BallotScheme;

use super::e2e::{self, Devnet, Setting, Watch};
use super::profile::{self, SpanHistograms};
use crate::seeds::{self, CPU_CRYPTO_PCT, CPU_DISK_WRITE_READ_PCT, CPU_RUNTIME_MALLOC_PCT, CPU_SHARES};
use crate::{Ctx, Experiment, StudyError};

/// Columns of `cpu.csv`. The `series` column says what a row is:
///
/// - `round`: one round of the load (`workload`; `name` its controller), `count` the samples
///   perf took on the peer over it, `tps` its throughput (confirmed transactions a second);
/// - `category`: a category's samples in a round (`name`, `count`), their share of the round's
///   samples (`share_pct`) and seed 003's printed share for it (`seed_pct`, where it printed
///   one);
/// - `detail`: the same for a part of a category (`name` = `category: part`);
/// - `symbol`: one of a category's three largest symbols in a round (`name` = `category:
///   symbol`), and `unclassified`: one of the twenty largest symbols no rule took;
/// - `span`: one of seed 001's functions' analogues in the miner's profile over all the rounds
///   (`name` the span, `count` its runs, `avg_us`, `max_us`, and `beyond_pct`: the share of
///   the runs its centred histogram saw that fell outside its range, below or past; `path`: the
///   call path that centred histogram is of);
///   `log2`: one bucket of its log2 histogram (`lo_ns`, `hi_ns`, `count`); `centred`: one
///   bucket of its centred histogram, with `lo_ns` empty for the runs below the range and
///   `hi_ns` empty for those past it;
/// - `recorded`: the seconds the miner's profiler recorded (`avg_us` holds them) and the node
///   (`name`).
pub const COLUMNS: &[&str] = &[
    "series",
    "workload",
    "name",
    "path",
    "count",
    "share_pct",
    "seed_pct",
    "avg_us",
    "max_us",
    "beyond_pct",
    "lo_ns",
    "hi_ns",
    "tps",
    "build",
    "commit",
];

/// The node perf samples: the devnet's only peer, which takes the load and validates it.
pub const SAMPLED: &str = "peer0";
/// The node whose function profile is recorded: the miner, which admits the load from gossip
/// and mines it, as seed 001's local machine did (Table 5).
pub const PROFILED: &str = "miner0";
/// perf's sampling frequency, Hz (an odd rate, off the kernel's timer ticks).
pub const FREQUENCY_HZ: u32 = 499;
/// perf's sampling frequency with `--quick`, Hz: its rounds last a second, and a node that
/// keeps half a core busy for a second gives some 500 samples at this rate.
pub const QUICK_FREQUENCY_HZ: u32 = 1_999;
/// The devnet: one peer and one miner (and the bootstrap node).
pub const DEVNET: Devnet = Devnet { peers: 1, miners: 1 };

// ---------------------------------------------------------------------------------------------
// The categories and the table that sorts samples into them
// ---------------------------------------------------------------------------------------------

/// Seed 003's categories of primitive operations, as this node's code falls into them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Signature verification and the curve arithmetic under it (Ed25519, secp256k1; in a
    /// ballot, the ElGamal proofs' arithmetic is the same curve's).
    Signatures,
    /// SHA-256, BLAKE3 and the checksums of the storage engine.
    Hashing,
    /// Encoding and decoding: the node's binary codec, JSON (serde), protobuf.
    Serialisation,
    /// The storage engine (fjall, lsm-tree) and the kernel's file systems and block layer.
    Disk,
    /// The storage engine's block compression (LZ4).
    Compression,
    /// The allocator (glibc malloc and free, the kernel's page faults and mappings), the async
    /// runtime (tokio) and the thread pools (rayon).
    Runtime,
    /// The tracing subscriber.
    Logging,
    /// libp2p (its transport, noise, yamux, gossipsub), the HTTP API's server, the kernel's
    /// TCP/IP.
    Network,
    /// Mutexes, read-write locks, condition variables, semaphores, and the kernel's futex under
    /// them.
    Locks,
    /// The ledger's rules: consensus checks, the mempool's policy and graph, the chain's
    /// bookkeeping — what seed 003's multiversion concurrency check does for Fabric.
    Ledger,
    /// Everything else.
    Other,
}

impl Category {
    /// Every category, in the report's order.
    pub const ALL: [Category; 11] = [
        Category::Signatures,
        Category::Hashing,
        Category::Serialisation,
        Category::Disk,
        Category::Compression,
        Category::Runtime,
        Category::Logging,
        Category::Network,
        Category::Locks,
        Category::Ledger,
        Category::Other,
    ];

    /// Its name (a CSV cell).
    pub fn name(self) -> &'static str {
        match self {
            Category::Signatures => "signatures",
            Category::Hashing => "hashing",
            Category::Serialisation => "serialisation",
            Category::Disk => "disk",
            Category::Compression => "compression",
            Category::Runtime => "runtime",
            Category::Logging => "logging",
            Category::Network => "network",
            Category::Locks => "locks",
            Category::Ledger => "ledger",
            Category::Other => "other",
        }
    }

    /// The operation of seed 003's breakdown ([`seeds::CPU_SHARES`]) it stands beside.
    pub fn seed_operation(self) -> Option<&'static str> {
        match self {
            Category::Signatures => Some("signature verification"),
            Category::Hashing => Some("SHA256"),
            Category::Serialisation => Some("data serialization and deserialization"),
            Category::Disk => Some("disk IO"),
            Category::Compression => Some("snappy compression"),
            Category::Runtime => Some("golang's runtime"),
            Category::Logging => Some("logging operations"),
            Category::Network => Some("network reads and writes"),
            Category::Locks => Some("locking and unlocking mutexes and semaphores"),
            Category::Ledger => Some("multiversion concurrency check"),
            Category::Other => None,
        }
    }

    /// Seed 003's printed share for it, percent.
    pub fn seed_pct(self) -> Option<f64> {
        let op = self.seed_operation()?;
        CPU_SHARES.iter().find(|s| s.operation == op).map(|s| s.pct)
    }
}

/// Where a rule looks: at a kernel frame or at a frame of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// A frame of the kernel (`[kernel.kallsyms]`).
    Kernel,
    /// A frame of the process: its binary or a library.
    User,
}

/// How a rule matches a frame's symbol (as `perf script` prints it, demangled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// The symbol starts with this.
    Prefix(&'static str),
    /// The symbol holds this where a path starts: at its start, or after `<`, `&`, `*`, `(`,
    /// `[`, a space or a comma — a crate's path, also inside `<T as Trait>::f`, but not the end
    /// of another name (`ring::` is not in `alloc::string::`).
    Contains(&'static str),
    /// The symbol is this.
    Exact(&'static str),
    /// The symbol holds the first where a path starts (as [`Pattern::Contains`]) and the second
    /// anywhere: an item of a crate by its name (`scalechain_` and `::decode`: the node's
    /// decoders, whatever their type).
    Item(&'static str, &'static str),
}

impl Pattern {
    fn matches(self, symbol: &str) -> bool {
        match self {
            Pattern::Prefix(p) => symbol.starts_with(p),
            Pattern::Contains(p) => symbol.match_indices(p).any(|(i, _)| {
                symbol[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| matches!(c, '<' | '&' | '*' | '(' | '[' | ' ' | ','))
            }),
            Pattern::Exact(p) => symbol == p,
            Pattern::Item(path, item) => Pattern::Contains(path).matches(symbol) && symbol.contains(item),
        }
    }
}

/// One line of the table: frames in `space` whose symbol matches `pattern` are `category`'s,
/// in its part `detail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The category.
    pub category: Category,
    /// The part of the category (for the report's splits: the allocator's share of the
    /// runtime, disk reads against writes).
    pub detail: &'static str,
    /// Kernel or process frames.
    pub space: Space,
    /// The symbol's pattern.
    pub pattern: Pattern,
}

const fn u(category: Category, detail: &'static str, pattern: Pattern) -> Rule {
    Rule { category, detail, space: Space::User, pattern }
}

const fn k(category: Category, detail: &'static str, pattern: Pattern) -> Rule {
    Rule { category, detail, space: Space::Kernel, pattern }
}

use Category::{
    Compression, Disk, Hashing, Ledger, Locks, Logging, Network, Runtime, Serialisation, Signatures,
};
use Pattern::{Contains as C, Exact as E, Item, Prefix as P};

/// The allocator's part of [`Category::Runtime`].
pub const ALLOCATOR: &str = "allocator";
/// The part of [`Category::Runtime`] that is the kernel's memory management (page faults,
/// mappings) under the allocator.
pub const MEMORY: &str = "page faults and mappings";
/// The table: a frame takes the category of the first rule that matches it. Rust symbols are
/// matched by their crate's path (`curve25519_dalek::`), C symbols (glibc, the kernel) by name.
pub const RULES: &[Rule] = &[
    // Signatures and the curve arithmetic under them.
    u(Signatures, "ed25519", C("curve25519_dalek::")),
    u(Signatures, "ed25519", C("ed25519_dalek::")),
    u(Signatures, "ed25519", C("ed25519_zebra::")),
    u(Signatures, "ed25519", C("ed25519::")),
    u(Signatures, "ed25519", C("fiat_crypto::")),
    u(Signatures, "secp256k1", C("secp256k1::")),
    u(Signatures, "secp256k1", C("secp256k1_sys::")),
    u(Signatures, "secp256k1", P("rustsecp256k1_")),
    u(Signatures, "secp256k1", C("k256::")),
    u(Signatures, "secp256k1", C("ecdsa::")),
    u(Signatures, "keys", C("scalechain_types::keys::")),
    u(Signatures, "constant-time helpers", C("subtle::")),
    // Hashing.
    u(Hashing, "sha2", C("sha2::")),
    u(Hashing, "sha2", P("sha256_block")),
    u(Hashing, "sha2", P("sha512_block")),
    u(Hashing, "blake3", C("blake3::")),
    u(Hashing, "blake3", P("blake3_")),
    u(Hashing, "other hashes", C("blake2::")),
    u(Hashing, "other hashes", C("sha1::")),
    u(Hashing, "other hashes", C("digest::")),
    u(Hashing, "checksums", C("xxhash_rust::")),
    u(Hashing, "checksums", C("twox_hash::")),
    u(Hashing, "checksums", C("crc32fast::")),
    u(Hashing, "the node's hashing", C("scalechain_types::hash::")),
    u(Hashing, "the node's hashing", C("scalechain_types::merkle::")),
    // Compression.
    u(Compression, "lz4", C("lz4_flex::")),
    u(Compression, "lz4", C("lz4::")),
    u(Compression, "other", C("miniz_oxide::")),
    u(Compression, "other", C("zstd")),
    u(Compression, "other", C("snap::")),
    // Serialisation.
    u(Serialisation, "the node's codec", C("scalechain_types::codec")),
    u(Serialisation, "the node's codec", Item("scalechain_", "::decode")),
    u(Serialisation, "the node's codec", Item("scalechain_", "::encode")),
    u(Serialisation, "serde", C("serde::")),
    u(Serialisation, "serde", C("serde_core::")),
    u(Serialisation, "serde", C("serde_json::")),
    u(Serialisation, "serde", C("serde_with::")),
    u(Serialisation, "protobuf", C("prost::")),
    u(Serialisation, "protobuf", C("quick_protobuf::")),
    u(Serialisation, "protobuf", C("unsigned_varint::")),
    u(Serialisation, "other", C("ciborium")),
    u(Serialisation, "other", C("borsh::")),
    u(Serialisation, "other", C("parity_scale_codec::")),
    u(Serialisation, "other", C("bincode::")),
    u(Serialisation, "text", C("hex::")),
    u(Serialisation, "text", C("base64::")),
    u(Serialisation, "text", C("ryu::")),
    u(Serialisation, "text", C("itoa::")),
    // Disk: the storage engine, and glibc's file calls.
    u(Disk, "engine", C("fjall::")),
    u(Disk, "engine", C("lsm_tree::")),
    u(Disk, "engine", C("value_log::")),
    u(Disk, "engine", C("sfa::")),
    u(Disk, "engine", C("crossbeam_skiplist::")),
    u(Disk, "engine", C("quick_cache::")),
    u(Disk, "engine", C("byteview::")),
    u(Disk, "engine", C("interval_heap::")),
    u(Disk, "engine", C("scalechain_store::")),
    u(Disk, "engine", C("std::fs::")),
    u(Disk, "read", P("__libc_pread")),
    u(Disk, "read", P("__GI___pread")),
    u(Disk, "read", E("pread64")),
    u(Disk, "write", P("__libc_pwrite")),
    u(Disk, "write", P("__GI___pwrite")),
    u(Disk, "write", E("pwrite64")),
    u(Disk, "write", P("fsync")),
    u(Disk, "write", P("fdatasync")),
    u(Disk, "write", P("__libc_fsync")),
    // Network: libp2p and its transport's crypto, the HTTP API, sockets.
    u(Network, "libp2p", C("libp2p")),
    u(Network, "libp2p", C("yamux::")),
    u(Network, "libp2p", C("multistream_select::")),
    u(Network, "libp2p", C("multiaddr::")),
    u(Network, "libp2p", C("asynchronous_codec::")),
    u(Network, "libp2p", C("scalechain_p2p::")),
    u(Network, "transport encryption", C("snow::")),
    u(Network, "transport encryption", C("chacha20poly1305::")),
    u(Network, "transport encryption", C("chacha20::")),
    u(Network, "transport encryption", C("poly1305::")),
    u(Network, "transport encryption", C("x25519_dalek::")),
    u(Network, "transport encryption", C("aes_gcm::")),
    u(Network, "transport encryption", C("ghash::")),
    u(Network, "transport encryption", C("rustls")),
    u(Network, "transport encryption", C("ring::")),
    u(Network, "transport encryption", C("aws_lc")),
    u(Network, "quic", C("quinn")),
    u(Network, "HTTP API", C("hyper::")),
    u(Network, "HTTP API", C("hyper_util::")),
    u(Network, "HTTP API", C("h2::")),
    u(Network, "HTTP API", C("httparse::")),
    u(Network, "HTTP API", C("axum::")),
    u(Network, "HTTP API", C("tower::")),
    u(Network, "HTTP API", C("tower_http::")),
    u(Network, "HTTP API", C("http::")),
    u(Network, "HTTP API", C("scalechain_node::api")),
    u(Network, "sockets", C("tokio::net::")),
    u(Network, "sockets", C("socket2::")),
    u(Network, "sockets", P("__libc_send")),
    u(Network, "sockets", P("__libc_recv")),
    u(Network, "sockets", P("__GI___libc_send")),
    u(Network, "sockets", P("__GI___libc_recv")),
    u(Network, "sockets", P("__send")),
    u(Network, "sockets", P("__recv")),
    u(Network, "sockets", E("send")),
    u(Network, "sockets", E("recv")),
    u(Network, "sockets", E("sendmsg")),
    u(Network, "sockets", E("recvmsg")),
    u(Network, "sockets", E("sendto")),
    u(Network, "sockets", E("recvfrom")),
    // Logging.
    u(Logging, "tracing", C("tracing::")),
    u(Logging, "tracing", C("tracing_core::")),
    u(Logging, "tracing", C("tracing_subscriber::")),
    u(Logging, "tracing", C("tracing_log::")),
    u(Logging, "tracing", C("log::")),
    u(Logging, "tracing", C("nu_ansi_term::")),
    // Locks: mutexes, read-write locks, condition variables, semaphores.
    u(Locks, "parking_lot", C("parking_lot::")),
    u(Locks, "parking_lot", C("parking_lot_core::")),
    u(Locks, "parking_lot", C("lock_api::")),
    u(Locks, "std", C("std::sync::mutex")),
    u(Locks, "std", C("std::sync::rwlock")),
    u(Locks, "std", C("std::sync::poison")),
    u(Locks, "std", C("std::sync::condvar")),
    u(Locks, "std", C("std::sys::sync::")),
    u(Locks, "std", C("std::sys::pal::unix::futex")),
    u(Locks, "async", C("tokio::sync::batch_semaphore")),
    u(Locks, "async", C("tokio::sync::mutex")),
    u(Locks, "async", C("tokio::sync::rwlock")),
    u(Locks, "async", C("tokio::sync::semaphore")),
    u(Locks, "other", C("dashmap::lock")),
    u(Locks, "lock-free snapshots", C("arc_swap::")),
    u(Locks, "other", C("spin::")),
    u(Locks, "glibc", P("pthread_mutex_")),
    u(Locks, "glibc", P("___pthread_mutex")),
    u(Locks, "glibc", P("__pthread_mutex")),
    u(Locks, "glibc", P("pthread_rwlock")),
    u(Locks, "glibc", P("__pthread_rwlock")),
    u(Locks, "glibc", P("pthread_cond")),
    u(Locks, "glibc", P("__pthread_cond")),
    u(Locks, "glibc", P("___pthread_cond")),
    u(Locks, "glibc", P("__lll_lock")),
    u(Locks, "glibc", P("__lll_unlock")),
    u(Locks, "glibc", P("__futex")),
    u(Locks, "glibc", P("futex_")),
    u(Locks, "glibc", P("sem_")),
    // The runtime: the allocator, the async runtime, the thread pools.
    u(Runtime, ALLOCATOR, E("malloc")),
    u(Runtime, ALLOCATOR, E("free")),
    u(Runtime, ALLOCATOR, E("cfree")),
    u(Runtime, ALLOCATOR, E("realloc")),
    u(Runtime, ALLOCATOR, E("calloc")),
    u(Runtime, ALLOCATOR, P("__libc_malloc")),
    u(Runtime, ALLOCATOR, P("__libc_free")),
    u(Runtime, ALLOCATOR, P("__libc_realloc")),
    u(Runtime, ALLOCATOR, P("__libc_calloc")),
    u(Runtime, ALLOCATOR, P("__GI___libc_malloc")),
    u(Runtime, ALLOCATOR, P("__GI___libc_free")),
    u(Runtime, ALLOCATOR, P("__GI___libc_realloc")),
    u(Runtime, ALLOCATOR, P("_int_malloc")),
    u(Runtime, ALLOCATOR, P("_int_free")),
    u(Runtime, ALLOCATOR, P("_int_realloc")),
    u(Runtime, ALLOCATOR, P("_int_memalign")),
    u(Runtime, ALLOCATOR, P("malloc_")),
    u(Runtime, ALLOCATOR, P("__malloc_")),
    u(Runtime, ALLOCATOR, P("unlink_chunk")),
    u(Runtime, ALLOCATOR, P("sysmalloc")),
    u(Runtime, ALLOCATOR, P("systrim")),
    u(Runtime, ALLOCATOR, P("tcache_")),
    u(Runtime, ALLOCATOR, P("alloc_perturb")),
    u(Runtime, ALLOCATOR, P("aligned_alloc")),
    u(Runtime, ALLOCATOR, P("posix_memalign")),
    u(Runtime, ALLOCATOR, P("__posix_memalign")),
    u(Runtime, ALLOCATOR, P("__rust_alloc")),
    u(Runtime, ALLOCATOR, P("__rust_dealloc")),
    u(Runtime, ALLOCATOR, P("__rust_realloc")),
    u(Runtime, ALLOCATOR, P("__rdl_")),
    u(Runtime, ALLOCATOR, P("__rustc::__rdl_")),
    u(Runtime, ALLOCATOR, P("__rustc::__rust_")),
    u(Runtime, ALLOCATOR, C("alloc::alloc::")),
    u(Runtime, ALLOCATOR, C("alloc::raw_vec::")),
    u(Runtime, "async runtime", C("tokio::")),
    u(Runtime, "async runtime", C("futures_util::")),
    u(Runtime, "async runtime", C("futures_executor::")),
    u(Runtime, "async runtime", C("futures_channel::")),
    u(Runtime, "async runtime", C("futures_core::")),
    u(Runtime, "async runtime", C("mio::")),
    u(Runtime, "async runtime", C("async_io::")),
    u(Runtime, "async runtime", C("polling::")),
    u(Runtime, "async runtime", C("event_listener")),
    u(Runtime, "async runtime", C("async_channel::")),
    u(Runtime, "async runtime", C("crossbeam_channel::")),
    u(Runtime, "async runtime", C("flume::")),
    u(Runtime, "async runtime", P("epoll_wait")),
    u(Runtime, "async runtime", P("__GI_epoll_wait")),
    u(Runtime, "async runtime", P("epoll_ctl")),
    u(Runtime, "thread pools", C("rayon_core::")),
    u(Runtime, "thread pools", C("rayon::")),
    u(Runtime, "thread pools", C("crossbeam_deque::")),
    u(Runtime, "thread pools", C("crossbeam_epoch::")),
    u(Runtime, "thread pools", C("crossbeam_utils::")),
    u(Runtime, "thread pools", C("std::thread::")),
    u(Runtime, "thread pools", C("std::sys::pal::unix::thread")),
    u(Runtime, "thread pools", P("sched_yield")),
    u(Runtime, "thread pools", P("__sched_yield")),
    u(Runtime, "thread pools", P("start_thread")),
    // The ledger's rules.
    u(Ledger, "consensus", C("scalechain_consensus::")),
    u(Ledger, "mempool", C("scalechain_mempool::")),
    u(Ledger, "chain", C("scalechain_chain::")),
    u(Ledger, "replica", C("scalechain_replica::")),
    // The kernel: networking.
    k(Network, "kernel TCP/IP", P("tcp_")),
    k(Network, "kernel TCP/IP", P("__tcp")),
    k(Network, "kernel TCP/IP", P("tcp4_")),
    k(Network, "kernel TCP/IP", P("inet_")),
    k(Network, "kernel TCP/IP", P("__inet")),
    k(Network, "kernel TCP/IP", P("ip_")),
    k(Network, "kernel TCP/IP", P("__ip_")),
    k(Network, "kernel TCP/IP", P("ip6_")),
    k(Network, "kernel TCP/IP", P("ipv4_")),
    k(Network, "kernel TCP/IP", P("ipv6_")),
    k(Network, "kernel TCP/IP", P("udp_")),
    k(Network, "kernel TCP/IP", P("__udp")),
    k(Network, "kernel TCP/IP", P("unix_")),
    k(Network, "kernel TCP/IP", P("sock_")),
    k(Network, "kernel TCP/IP", P("__sock_")),
    k(Network, "kernel TCP/IP", P("sk_")),
    k(Network, "kernel TCP/IP", P("__sk_")),
    k(Network, "kernel TCP/IP", P("lock_sock")),
    k(Network, "kernel TCP/IP", P("release_sock")),
    k(Network, "kernel TCP/IP", P("skb_")),
    k(Network, "kernel TCP/IP", P("__skb")),
    k(Network, "kernel TCP/IP", P("kfree_skb")),
    k(Network, "kernel TCP/IP", P("__kfree_skb")),
    k(Network, "kernel TCP/IP", P("consume_skb")),
    k(Network, "kernel TCP/IP", P("alloc_skb")),
    k(Network, "kernel TCP/IP", P("__alloc_skb")),
    k(Network, "kernel TCP/IP", P("netif_")),
    k(Network, "kernel TCP/IP", P("__netif")),
    k(Network, "kernel TCP/IP", P("net_rx_action")),
    k(Network, "kernel TCP/IP", P("napi_")),
    k(Network, "kernel TCP/IP", P("__napi")),
    k(Network, "kernel TCP/IP", P("process_backlog")),
    k(Network, "kernel TCP/IP", P("__dev_queue_xmit")),
    k(Network, "kernel TCP/IP", P("dev_queue_xmit")),
    k(Network, "kernel TCP/IP", P("dev_hard_start_xmit")),
    k(Network, "kernel TCP/IP", P("loopback_xmit")),
    k(Network, "kernel TCP/IP", P("nf_")),
    k(Network, "kernel TCP/IP", P("nft_")),
    k(Network, "kernel TCP/IP", P("neigh_")),
    k(Network, "kernel TCP/IP", P("security_socket")),
    k(Network, "kernel TCP/IP", P("__sys_send")),
    k(Network, "kernel TCP/IP", P("__sys_recv")),
    k(Network, "kernel TCP/IP", P("___sys_send")),
    k(Network, "kernel TCP/IP", P("___sys_recv")),
    k(Network, "kernel TCP/IP", P("__sys_accept")),
    k(Network, "kernel TCP/IP", P("__sys_connect")),
    k(Network, "kernel TCP/IP", P("__x64_sys_send")),
    k(Network, "kernel TCP/IP", P("__x64_sys_recv")),
    k(Network, "kernel TCP/IP", P("__x64_sys_accept")),
    k(Network, "kernel TCP/IP", P("__x64_sys_connect")),
    k(Network, "kernel TCP/IP", P("__x64_sys_socket")),
    // The kernel: file systems and the block layer.
    k(Disk, "kernel", P("ext4_")),
    k(Disk, "kernel", P("jbd2_")),
    k(Disk, "kernel", P("__jbd2")),
    k(Disk, "kernel", P("xfs_")),
    k(Disk, "kernel", P("btrfs_")),
    k(Disk, "kernel", P("ovl_")),
    k(Disk, "kernel", P("filemap_")),
    k(Disk, "kernel", P("__filemap")),
    k(Disk, "kernel", P("generic_perform_write")),
    k(Disk, "kernel", P("generic_file_")),
    k(Disk, "kernel", P("__generic_file")),
    k(Disk, "kernel", P("iomap_")),
    k(Disk, "kernel", P("blk_")),
    k(Disk, "kernel", P("__blk")),
    k(Disk, "kernel", P("bio_")),
    k(Disk, "kernel", P("submit_bio")),
    k(Disk, "kernel", P("__submit_bio")),
    k(Disk, "kernel", P("virtblk_")),
    k(Disk, "kernel", P("mpage_")),
    k(Disk, "kernel", P("writeback_")),
    k(Disk, "kernel", P("__writeback")),
    k(Disk, "kernel", P("wb_")),
    k(Disk, "kernel", P("do_writepages")),
    k(Disk, "kernel", P("page_cache_")),
    k(Disk, "kernel", P("file_write_and_wait")),
    k(Disk, "kernel", P("do_fsync")),
    k(Disk, "kernel", P("vfs_fsync")),
    k(Disk, "kernel", P("__x64_sys_fsync")),
    k(Disk, "kernel", P("__x64_sys_fdatasync")),
    k(Disk, "kernel", P("__x64_sys_pread64")),
    k(Disk, "kernel", P("__x64_sys_pwrite64")),
    k(Disk, "kernel", P("ksys_pread64")),
    k(Disk, "kernel", P("ksys_pwrite64")),
    k(Disk, "kernel", P("__x64_sys_fallocate")),
    k(Disk, "kernel", P("__x64_sys_ftruncate")),
    k(Disk, "kernel", P("__x64_sys_openat")),
    k(Disk, "kernel", P("do_sys_openat2")),
    k(Disk, "kernel", P("__x64_sys_rename")),
    k(Disk, "kernel", P("__x64_sys_unlink")),
    // The kernel: memory under the allocator; the threads' and event loop's calls.
    k(Runtime, MEMORY, P("handle_mm_fault")),
    k(Runtime, MEMORY, P("__handle_mm_fault")),
    k(Runtime, MEMORY, P("do_anonymous_page")),
    k(Runtime, MEMORY, P("do_huge_pmd_anonymous_page")),
    k(Runtime, MEMORY, P("do_wp_page")),
    k(Runtime, MEMORY, P("exc_page_fault")),
    k(Runtime, MEMORY, P("do_user_addr_fault")),
    k(Runtime, MEMORY, P("clear_page")),
    k(Runtime, MEMORY, P("__x64_sys_mmap")),
    k(Runtime, MEMORY, P("__x64_sys_munmap")),
    k(Runtime, MEMORY, P("__x64_sys_mremap")),
    k(Runtime, MEMORY, P("__x64_sys_madvise")),
    k(Runtime, MEMORY, P("__x64_sys_brk")),
    k(Runtime, MEMORY, P("__x64_sys_mprotect")),
    k(Runtime, MEMORY, P("do_madvise")),
    k(Runtime, MEMORY, P("__vm_munmap")),
    k(Runtime, MEMORY, P("do_mmap")),
    k(Runtime, MEMORY, P("zap_pte_range")),
    k(Runtime, MEMORY, P("unmap_page_range")),
    k(Runtime, "threads and event loop", P("__x64_sys_sched_yield")),
    k(Runtime, "threads and event loop", P("do_sched_yield")),
    k(Runtime, "threads and event loop", P("__x64_sys_epoll")),
    k(Runtime, "threads and event loop", P("do_epoll_wait")),
    k(Runtime, "threads and event loop", P("ep_poll")),
    k(Runtime, "threads and event loop", P("__x64_sys_nanosleep")),
    k(Runtime, "threads and event loop", P("__x64_sys_clock_nanosleep")),
    k(Runtime, "threads and event loop", P("hrtimer_nanosleep")),
    k(Runtime, "threads and event loop", P("do_nanosleep")),
    k(Runtime, "threads and event loop", P("__x64_sys_clone")),
    k(Runtime, "threads and event loop", P("eventfd_")),
    // The kernel: the futex under every blocking lock, condition variable and thread park.
    k(Locks, "kernel futex", P("futex_")),
    k(Locks, "kernel futex", P("__futex")),
    k(Locks, "kernel futex", P("do_futex")),
    k(Locks, "kernel futex", P("__x64_sys_futex")),
];

/// One frame of a sample, as `perf script` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The symbol (demangled), or `[unknown]`.
    pub symbol: String,
    /// The binary or library (`[kernel.kallsyms]` for the kernel).
    pub dso: String,
}

impl Frame {
    /// Is it a frame of the kernel?
    pub fn kernel(&self) -> bool {
        self.dso.starts_with("[kernel") || self.dso.starts_with("[guest.kernel")
    }

    /// The rule that takes it, if any. A versioned symbol (`cfree@GLIBC_2.2.5`) is matched by
    /// its name.
    pub fn rule(&self) -> Option<&'static Rule> {
        let space = if self.kernel() { Space::Kernel } else { Space::User };
        let symbol = self.symbol.split_once('@').map_or(self.symbol.as_str(), |(name, _)| name);
        RULES.iter().find(|r| r.space == space && r.pattern.matches(symbol))
    }

    /// How the report names it: its symbol, or the binary it lies in when perf knew no symbol.
    pub fn name(&self) -> String {
        if self.symbol == "[unknown]" || self.symbol.is_empty() {
            format!("[unknown] in {}", self.dso.rsplit('/').next().unwrap_or(&self.dso))
        } else {
            self.symbol.clone()
        }
    }
}

/// Where a sample went: its category, the part of it, and the symbol the report names it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The category.
    pub category: Category,
    /// The part (`unclassified` for [`Category::Other`]).
    pub detail: &'static str,
    /// The frame that decided (for [`Category::Other`], the process's frame the sample was
    /// in, marked when the kernel ran on its behalf).
    pub symbol: String,
}

/// Sorts one sample (its frames, the innermost first) into a category.
///
/// Only the frames perf unwinds reliably count: every kernel frame (the kernel keeps the
/// unwind information) and the first frame of the process — where its code was running, or
/// the call into the kernel. Frames further out come from following frame pointers through code
/// built without them (release builds of Rust, glibc) and may be garbage, so they are ignored.
/// The counted frames are tried innermost first and the first one a rule takes decides: a
/// kernel sample goes where the kernel's own work is (TCP, a file system, a futex) before the
/// system call that led to it, and a sample in the process goes where its code was running
/// (self time, as a flat profile counts it). A kernel frame no rule takes (the scheduler,
/// system call entry, copies to user memory) passes the decision outward.
pub fn classify(frames: &[Frame]) -> Verdict {
    let user = frames.iter().position(|f| !f.kernel());
    let counted = &frames[..user.map_or(frames.len(), |i| i + 1)];
    for f in counted {
        if let Some(r) = f.rule() {
            let detail =
                if r.category == Disk && r.space == Space::Kernel { disk_part(counted) } else { r.detail };
            return Verdict { category: r.category, detail, symbol: f.name() };
        }
    }
    let in_kernel = frames.first().is_some_and(Frame::kernel);
    let symbol = match (user, in_kernel) {
        (Some(i), true) => format!("{} (in the kernel)", frames[i].name()),
        (Some(i), false) => frames[i].name(),
        (None, _) => frames.first().map_or_else(|| "[no frames]".to_string(), Frame::name),
    };
    Verdict { category: Category::Other, detail: "unclassified", symbol }
}

/// A kernel disk sample's part: a read or a write by the system call (or page fault) under it.
fn disk_part(frames: &[Frame]) -> &'static str {
    const WRITES: [&str; 9] = [
        "vfs_write",
        "ksys_write",
        "ksys_pwrite64",
        "__x64_sys_write",
        "__x64_sys_pwrite64",
        "do_fsync",
        "vfs_fsync",
        "wb_",
        "writeback_",
    ];
    const READS: [&str; 6] =
        ["vfs_read", "ksys_read", "ksys_pread64", "__x64_sys_read", "__x64_sys_pread64", "filemap_fault"];
    let any = |names: &[&str]| frames.iter().any(|f| names.iter().any(|n| f.symbol.starts_with(n)));
    if any(&WRITES) {
        "write"
    } else if any(&READS) {
        "read"
    } else {
        "kernel"
    }
}

// ---------------------------------------------------------------------------------------------
// Counting samples
// ---------------------------------------------------------------------------------------------

/// The samples of one recording, by category, part and symbol.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Samples in all.
    pub samples: u64,
    /// By category.
    pub categories: BTreeMap<Category, u64>,
    /// By category and part.
    pub details: BTreeMap<(Category, &'static str), u64>,
    /// By category and the symbol that decided.
    pub symbols: BTreeMap<Category, HashMap<String, u64>>,
}

impl Tally {
    /// Counts one sample.
    pub fn add(&mut self, frames: &[Frame]) {
        let v = classify(frames);
        self.samples += 1;
        *self.categories.entry(v.category).or_default() += 1;
        *self.details.entry((v.category, v.detail)).or_default() += 1;
        *self.symbols.entry(v.category).or_default().entry(v.symbol).or_default() += 1;
    }

    /// Reads `perf script -F comm,tid,ip,sym,dso` output: a sample is a line naming its thread,
    /// then one indented line per frame (`address symbol (dso)`), then a blank line. A line that
    /// is neither is an error (the format is not what this reads).
    pub fn read(input: impl BufRead) -> Result<Tally, String> {
        let mut tally = Tally::default();
        let mut frames: Vec<Frame> = Vec::new();
        let mut open = false;
        for (n, line) in input.lines().enumerate() {
            let line = line.map_err(|e| format!("reading perf script's output: {e}"))?;
            if line.trim().is_empty() {
                if open {
                    tally.add(&frames);
                }
                frames.clear();
                open = false;
            } else if line.starts_with(char::is_whitespace) {
                if !open {
                    return Err(format!("line {}: a frame outside a sample: {line:?}", n + 1));
                }
                frames.push(
                    parse_frame(&line).ok_or_else(|| format!("line {}: not a frame: {line:?}", n + 1))?,
                );
            } else {
                if open {
                    tally.add(&frames);
                }
                frames.clear();
                open = true;
            }
        }
        if open {
            tally.add(&frames);
        }
        Ok(tally)
    }

    /// A category's share of the samples, percent.
    pub fn pct(&self, c: Category) -> f64 {
        self.categories.get(&c).copied().unwrap_or(0) as f64 * 100.0 / self.samples.max(1) as f64
    }

    /// The `n` largest symbols of a category, largest first (ties by name).
    pub fn top(&self, c: Category, n: usize) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .symbols
            .get(&c)
            .map(|m| m.iter().map(|(s, n)| (s.clone(), *n)).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// One frame line: `    address symbol (dso)`; the symbol may hold spaces and parentheses.
fn parse_frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (_addr, rest) = line.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    let open = rest.rfind(" (").or_else(|| rest.starts_with('(').then_some(0))?;
    let dso = rest.get(open..)?.trim_start().strip_prefix('(')?.strip_suffix(')')?;
    Some(Frame { symbol: rest[..open].trim().to_string(), dso: dso.to_string() })
}

// ---------------------------------------------------------------------------------------------
// perf
// ---------------------------------------------------------------------------------------------

/// Why `perf` could not sample the node.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// There is no `perf` to run.
    #[error(
        "cpu samples a node with Linux perf, and there is none here ({0}); on Debian: apt-get install linux-perf"
    )]
    Missing(String),
    /// The kernel refused perf the events (`kernel.perf_event_paranoid`, a container without
    /// `CAP_PERFMON`).
    #[error(
        "perf may not sample another process here (kernel.perf_event_paranoid = {paranoid}; run as root, \
         or lower it with sysctl kernel.perf_event_paranoid=-1, or give the container CAP_PERFMON): {detail}"
    )]
    Refused {
        /// The setting, as `/proc/sys/kernel/perf_event_paranoid` holds it.
        paranoid: String,
        /// What perf said.
        detail: String,
    },
    /// perf ran and failed otherwise.
    #[error("perf {what}: {detail}")]
    Failed {
        /// What it was doing.
        what: String,
        /// What went wrong.
        detail: String,
    },
}

fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map_or_else(|e| format!("unreadable: {e}"), |s| s.trim().to_string())
}

/// The error for a perf that exited with `status` having printed `stderr`.
fn perf_failed(what: &str, status: std::process::ExitStatus, stderr: &str) -> PerfError {
    let refused =
        ["perf_event_paranoid", "Permission denied", "Operation not permitted", "Access to performance"];
    let detail = format!("{status}: {}", stderr.trim());
    if refused.iter().any(|r| stderr.contains(r)) {
        PerfError::Refused { paranoid: paranoid(), detail }
    } else {
        PerfError::Failed { what: what.into(), detail }
    }
}

fn perf_spawn(args: &[&str], stdout: Stdio, stderr: Stdio) -> Result<Child, PerfError> {
    Command::new("perf").args(args).stdin(Stdio::null()).stdout(stdout).stderr(stderr).spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            PerfError::Missing(e.to_string())
        } else {
            PerfError::Failed { what: "could not be started".into(), detail: e.to_string() }
        }
    })
}

/// The effective user id of this process (`/proc/self/status`).
fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// Checks, before any node starts, that perf may sample another process's kernel and user
/// frames here: as root, or with `kernel.perf_event_paranoid` at 1 or below (at 2 perf would
/// quietly sample the process's own code only, and the kernel's share — its TCP/IP, file
/// systems, futexes — would be lost); then that perf runs and may count this process
/// (`perf stat` for 10 ms: a container may refuse the events whatever the setting).
pub fn check_perf() -> Result<(), PerfError> {
    let setting = paranoid();
    let level: Option<i32> = setting.parse().ok();
    if euid() != Some(0) && level.is_none_or(|l| l > 1) {
        return Err(PerfError::Refused {
            paranoid: setting,
            detail: "not root, and above 1 perf samples no kernel frames of another process".into(),
        });
    }
    let pid = std::process::id().to_string();
    let args = ["stat", "-e", "cpu-clock", "-p", &pid, "--", "sleep", "0.01"];
    let out = perf_spawn(&args, Stdio::null(), Stdio::piped())?
        .wait_with_output()
        .map_err(|e| PerfError::Failed { what: "stat (the check)".into(), detail: e.to_string() })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(perf_failed("stat (the check)", out.status, &String::from_utf8_lossy(&out.stderr)))
    }
}

/// A `perf record` sampling one process until stopped.
struct Recording {
    child: Child,
    /// perf's control input (`--control fd:0,1`), kept open while it records.
    _control: std::process::ChildStdin,
    data: PathBuf,
    log: PathBuf,
}

impl Recording {
    /// Starts sampling `pid` at `hz` into `data` (perf's messages go to `log`), and returns once
    /// perf samples: it starts with its events off (`-D -1`), sets itself up (reading the
    /// kernel's symbols and the process's mappings takes about half a second), and turns them on
    /// when told to on its control input, answering `ack` on its output.
    fn start(pid: u32, hz: u32, data: PathBuf, log: PathBuf) -> Result<Recording, PerfError> {
        use std::io::Write as _;
        let err = std::fs::File::create(&log).map_err(|e| PerfError::Failed {
            what: format!("log {}", log.display()),
            detail: e.to_string(),
        })?;
        let (pid, freq, out) = (pid.to_string(), hz.to_string(), data.to_string_lossy().into_owned());
        let args = [
            "record",
            "-q",
            "-B",
            "-D",
            "-1",
            "--control",
            "fd:0,1",
            "-e",
            "cpu-clock",
            "-F",
            &freq,
            "-g",
            "-p",
            &pid,
            "-o",
            &out,
        ];
        let mut child = Command::new("perf")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    PerfError::Missing(e.to_string())
                } else {
                    PerfError::Failed { what: "record could not be started".into(), detail: e.to_string() }
                }
            })?;
        let (Some(mut control), Some(acks)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(PerfError::Failed { what: "record".into(), detail: "no control pipes".into() });
        };
        let mut ack = String::new();
        let told = control.write_all(b"enable\n").and_then(|()| control.flush());
        let answered = told.and_then(|()| std::io::BufReader::new(acks).read_line(&mut ack));
        if answered.is_err() || ack.trim() != "ack" {
            // perf ended (or never listened): its log says why.
            let _ = child.kill();
            let status = child.wait();
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(match status {
                Ok(status) => perf_failed("record did not start", status, &said),
                Err(e) => PerfError::Failed { what: "record did not start".into(), detail: e.to_string() },
            });
        }
        Ok(Recording { child, _control: control, data, log })
    }

    /// Stops it (SIGINT, as Ctrl-C would: perf then writes its file) and waits, at most 60 s.
    fn stop(mut self) -> Result<PathBuf, PerfError> {
        let log = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(perf_failed("record ended before the round did", status, &log(&self.log)));
        }
        signal_pid(self.child.id(), Sig::Int).map_err(|e| PerfError::Failed {
            what: "record could not be stopped".into(),
            detail: e.to_string(),
        })?;
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(PerfError::Failed {
                        what: "record".into(),
                        detail: "did not end within 60 s of SIGINT".into(),
                    });
                }
                Err(e) => return Err(PerfError::Failed { what: "record".into(), detail: e.to_string() }),
            }
        };
        // perf ends with the signal's status or 0 after writing its file; the file is what counts.
        let written = std::fs::metadata(&self.data).map(|m| m.len() > 0).unwrap_or(false);
        if written {
            Ok(std::mem::take(&mut self.data))
        } else {
            Err(perf_failed("record wrote no data", status, &log(&self.log)))
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // A recording dropped unstopped (a failure elsewhere) does not outlive the experiment.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Counts the samples of a recording (`perf script`, without inline frames: resolving them
/// would run addr2line over every address).
pub fn tally(data: &Path) -> Result<Tally, PerfError> {
    let input = data.to_string_lossy().into_owned();
    let args = ["script", "-i", &input, "-F", "comm,tid,ip,sym,dso", "--no-inline"];
    let mut child = perf_spawn(&args, Stdio::piped(), Stdio::piped())?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| PerfError::Failed { what: "script".into(), detail: "no output".into() })?;
    let mut stderr = child.stderr.take();
    // perf's messages are drained beside the samples so neither pipe fills.
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let read = Tally::read(std::io::BufReader::new(stdout));
    let status =
        child.wait().map_err(|e| PerfError::Failed { what: "script".into(), detail: e.to_string() })?;
    let errors = errors.join().unwrap_or_default();
    if !status.success() {
        return Err(perf_failed("script", status, &errors));
    }
    read.map_err(|detail| PerfError::Failed { what: "script".into(), detail })
}

// ---------------------------------------------------------------------------------------------
// The watcher: perf around each round, the miner's profile over all of them
// ---------------------------------------------------------------------------------------------

struct CpuWatch {
    dir: PathBuf,
    hz: u32,
    pid: Option<u32>,
    /// The profiled node's API, blocking: it is called where the rounds run, inside the
    /// runtime, from a thread of its own.
    miner: Option<scalechain_client::blocking::Client>,
    running: Option<(usize, Recording)>,
    /// Each round's recording, by the round's index.
    recorded: BTreeMap<usize, PathBuf>,
    error: Option<StudyError>,
    profile: Vec<ProfilePath>,
    recorded_s: f64,
}

impl CpuWatch {
    fn fail(&mut self, e: impl Into<StudyError>) {
        if self.error.is_none() {
            self.error = Some(e.into());
        }
    }
}

impl Watch for CpuWatch {
    fn begin(&mut self, net: &Launcher, rt: &tokio::runtime::Runtime) -> Result<(), StudyError> {
        self.pid = net.pids().into_iter().find(|(n, _)| n == SAMPLED).map(|(_, p)| p);
        if self.pid.is_none() {
            return Err(StudyError::Wrong(format!("the devnet has no {SAMPLED} to sample")));
        }
        let miner = net.node(PROFILED).map_err(|e| StudyError::Wrong(e.to_string()))?;
        // Off while the rounds' transactions are signed and funded.
        let off = ProfileControl { enabled: Some(false), reset: true };
        rt.block_on(miner.client().profile_control(&off))
            .map_err(|e| StudyError::Wrong(format!("{PROFILED}'s profiler: {e}")))?;
        self.miner =
            Some(miner.blocking_client().map_err(|e| StudyError::Wrong(format!("{PROFILED}: {e}")))?);
        Ok(())
    }

    fn round(&mut self, _label: &str, i: usize, edge: RoundEdge) {
        match edge {
            RoundEdge::Start => {
                if i == 0 {
                    // The profile covers the rounds: from the first one's start to the end.
                    let on = ProfileControl { enabled: Some(true), reset: true };
                    let switched = self.miner.as_ref().map(|m| {
                        std::thread::scope(|s| s.spawn(|| m.profile_control(&on)).join())
                            .map_err(|_| "the call's thread panicked".to_string())
                            .and_then(|r| r.map(|_| ()).map_err(|e| e.to_string()))
                    });
                    if let Some(Err(e)) = switched {
                        self.fail(StudyError::Wrong(format!("{PROFILED}'s profiler: {e}")));
                    }
                }
                let Some(pid) = self.pid else { return };
                let (data, log) =
                    (self.dir.join(format!("round{i}.data")), self.dir.join(format!("round{i}.log")));
                match Recording::start(pid, self.hz, data, log) {
                    Ok(r) => self.running = Some((i, r)),
                    Err(e) => self.fail(e),
                }
            }
            RoundEdge::End => {
                if let Some((i, r)) = self.running.take() {
                    match r.stop() {
                        Ok(data) => {
                            self.recorded.insert(i, data);
                        }
                        Err(e) => self.fail(e),
                    }
                }
            }
        }
    }

    fn end(&mut self, net: &mut Launcher, rt: &tokio::runtime::Runtime) -> Result<(), StudyError> {
        if let Some((_, r)) = self.running.take() {
            drop(r);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let miner = net.node(PROFILED).map_err(|e| StudyError::Wrong(e.to_string()))?;
        let (paths, recorded_s) = rt.block_on(super::propagation::read_paths(miner.client()))?;
        self.profile = paths;
        self.recorded_s = recorded_s;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The experiment
// ---------------------------------------------------------------------------------------------

/// One round of the load: its label, workload, backlog, transactions at most, and length.
struct Load {
    label: &'static str,
    workload: Workload,
    backlog: u64,
    txs: u64,
    secs: u64,
}

fn loads(quick: bool) -> Vec<Load> {
    let transfer = Workload::Transfer(Shape::ONE_TO_ONE);
    let ballot = Workload::Ballot { scheme: BallotScheme::Elgamal, candidates: 4 };
    if quick {
        return vec![
            Load { label: "transfer", workload: transfer, backlog: 200, txs: 600, secs: 1 },
            Load { label: "ballot-elgamal", workload: ballot, backlog: 50, txs: 100, secs: 1 },
        ];
    }
    vec![
        Load { label: "transfer", workload: transfer, backlog: 20_000, txs: 600_000, secs: 120 },
        Load { label: "ballot-elgamal", workload: ballot, backlog: 4_000, txs: 40_000, secs: 120 },
    ]
}

fn rounds(loads: &[Load]) -> Vec<Round> {
    loads
        .iter()
        .map(|l| Round {
            name: format!("{} fixed-load {}", l.label, l.backlog),
            line: 0,
            workload: l.workload.clone(),
            rate: Rate::FixedLoad { backlog: l.backlog },
            controller: "fixed-load",
            duration: Some(Duration::from_secs(l.secs)),
            txs: l.txs,
            drain: Duration::from_secs(60),
        })
        .collect()
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = e2e::node_binary(ctx, "cpu")?;
    let tmp = tempfile::Builder::new()
        .prefix("scalechain-cpu-")
        .tempdir()
        .map_err(|e| StudyError::io(&std::env::temp_dir(), e))?;
    check_perf()?;
    let hz = if ctx.opts.quick { QUICK_FREQUENCY_HZ } else { FREQUENCY_HZ };
    let loads = loads(ctx.opts.quick);
    let rounds = rounds(&loads);
    ctx.start(rounds.len() as u64 + 2, "cpu: starting a devnet of one peer and one miner");
    let mut watch = CpuWatch {
        dir: tmp.path().to_path_buf(),
        hz,
        pid: None,
        miner: None,
        running: None,
        recorded: BTreeMap::new(),
        error: None,
        profile: Vec::new(),
        recorded_s: 0.0,
    };
    let mut results: Vec<(usize, RoundResult)> = Vec::new();
    let groups = vec![("cpu".to_string(), rounds.clone())];
    e2e::run_watched(
        ctx,
        &exe,
        &Setting::default(),
        DEVNET,
        &groups,
        |_, i, _, r| results.push((i, r.clone())),
        &mut watch,
    )?;
    ctx.progress.set_message("cpu: reading the samples");
    let (build, commit) = (ctx.machine.build, ctx.machine.commit);
    let mut table = Table::new(COLUMNS);
    for (i, r) in &results {
        let load = loads.get(*i).ok_or_else(|| StudyError::Wrong(format!("no round {i}")))?;
        let data =
            watch.recorded.get(i).ok_or_else(|| StudyError::Wrong(format!("round {i} was not sampled")))?;
        let tally = tally(data)?;
        if tally.samples == 0 {
            return Err(StudyError::Wrong(format!(
                "perf took no sample of {SAMPLED} over the {} round",
                load.label
            )));
        }
        let controller = format!("fixed-load {} at {hz} Hz", load.backlog);
        table.rows.extend(tally_rows(&tally, load.label, &controller, r.throughput_tps, build, commit));
    }
    ctx.progress.inc(1);
    let h = profile::histograms(&watch.profile);
    if h.is_empty() {
        return Err(StudyError::Wrong(format!(
            "{PROFILED} recorded none of seed 001's functions' analogues"
        )));
    }
    table.rows.extend(histogram_rows(&h, watch.recorded_s, build, commit));
    ctx.finish(Experiment::Cpu, &table, charts, section)
}

/// A row with `series`, `workload` and `name` set and the rest empty but build and commit.
fn blank(series: &str, workload: &str, name: &str, build: &str, commit: &str) -> Vec<String> {
    let mut r = vec![String::new(); COLUMNS.len()];
    r[0] = series.into();
    r[1] = workload.into();
    r[2] = csv_cell(name);
    r[COLUMNS.len() - 2] = build.into();
    r[COLUMNS.len() - 1] = commit.into();
    r
}

/// A value fit for a cell of the CSV (no commas, no line breaks) and of a Markdown table (no
/// bars), at most 160 characters.
fn csv_cell(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if matches!(c, ',' | '\n' | '\r') {
                ';'
            } else if c == '|' {
                '¦'
            } else {
                c
            }
        })
        .collect();
    if s.chars().count() > 160 {
        format!("{}…", s.chars().take(159).collect::<String>())
    } else {
        s
    }
}

fn col(name: &str) -> usize {
    COLUMNS.iter().position(|c| *c == name).unwrap_or(0)
}

/// The rows of one round's samples.
fn tally_rows(
    t: &Tally,
    workload: &str,
    controller: &str,
    tps: f64,
    build: &str,
    commit: &str,
) -> Vec<Vec<String>> {
    let pct = |n: u64| format!("{:.2}", n as f64 * 100.0 / t.samples.max(1) as f64);
    let mut rows = Vec::new();
    let mut r = blank("round", workload, controller, build, commit);
    r[col("count")] = t.samples.to_string();
    r[col("tps")] = format!("{tps:.1}");
    rows.push(r);
    for c in Category::ALL {
        let n = t.categories.get(&c).copied().unwrap_or(0);
        let mut r = blank("category", workload, c.name(), build, commit);
        r[col("count")] = n.to_string();
        r[col("share_pct")] = pct(n);
        r[col("seed_pct")] = c.seed_pct().map_or(String::new(), |p| format!("{p}"));
        rows.push(r);
    }
    for ((c, d), n) in &t.details {
        let mut r = blank("detail", workload, &format!("{}: {d}", c.name()), build, commit);
        r[col("count")] = n.to_string();
        r[col("share_pct")] = pct(*n);
        rows.push(r);
    }
    for c in Category::ALL {
        let (series, n) = if c == Category::Other { ("unclassified", 20) } else { ("symbol", 3) };
        for (s, k) in t.top(c, n) {
            let name = if c == Category::Other { s } else { format!("{}: {s}", c.name()) };
            let mut r = blank(series, workload, &name, build, commit);
            r[col("count")] = k.to_string();
            r[col("share_pct")] = pct(k);
            rows.push(r);
        }
    }
    rows
}

/// The rows of the miner's profile: each analogue's statistics and histograms.
fn histogram_rows(h: &[SpanHistograms], recorded_s: f64, build: &str, commit: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut r = blank("recorded", "all", PROFILED, build, commit);
    r[col("avg_us")] = format!("{recorded_s:.1}");
    rows.push(r);
    for s in h {
        let mut r = blank("span", "all", &s.span, build, commit);
        r[col("count")] = s.calls.to_string();
        r[col("avg_us")] = format!("{:.2}", s.avg_us());
        r[col("max_us")] = format!("{:.2}", s.max_ns as f64 / 1e3);
        r[col("beyond_pct")] = s.beyond_pct().map_or(String::new(), |(u, o)| format!("{:.2}", u + o));
        if let Some(p) = &s.centred_path {
            r[col("path")] = csv_cell(p);
        }
        rows.push(r);
        let first = s.log2.iter().position(|&c| c > 0);
        let last = s.log2.iter().rposition(|&c| c > 0);
        if let (Some(a), Some(b)) = (first, last) {
            for (i, n) in s.log2.iter().enumerate().take(b + 1).skip(a) {
                let mut r = blank("log2", "all", &s.span, build, commit);
                r[col("lo_ns")] = (1u128 << i).to_string();
                r[col("hi_ns")] = (1u128 << (i + 1)).to_string();
                r[col("count")] = n.to_string();
                rows.push(r);
            }
        }
        if let Some(c) = &s.centred {
            let low = c.centre_ns.saturating_sub(c.width_ns * CENTRED_SIDE as u64);
            let mut under = blank("centred", "all", &s.span, build, commit);
            under[col("hi_ns")] = low.to_string();
            under[col("count")] = c.under.to_string();
            rows.push(under);
            for (i, n) in c.buckets.iter().enumerate() {
                let lo = low + c.width_ns * i as u64;
                let mut r = blank("centred", "all", &s.span, build, commit);
                r[col("lo_ns")] = lo.to_string();
                r[col("hi_ns")] = (lo + c.width_ns).to_string();
                r[col("count")] = n.to_string();
                rows.push(r);
            }
            let mut over = blank("centred", "all", &s.span, build, commit);
            over[col("lo_ns")] = (low + c.width_ns * c.buckets.len() as u64).to_string();
            over[col("count")] = c.over.to_string();
            rows.push(over);
        }
    }
    rows
}

/// The analogues' histograms back from the rows of `build`.
fn histograms_of(t: &Table, build: &str) -> Vec<SpanHistograms> {
    let ours = |r: &&Vec<String>| r[col("build")] == build;
    let num = |r: &Vec<String>, c: &str| r[col(c)].parse::<u64>().ok();
    let mut out = Vec::new();
    for r in t.select("series", "span").filter(ours) {
        let span = r[col("name")].clone();
        let of = |series: &'static str| {
            t.select("series", series).filter(ours).filter(|x| x[col("name")] == span).collect::<Vec<_>>()
        };
        let mut log2 = vec![0u64; scalechain_types::profile::HISTOGRAM_BUCKETS];
        for x in of("log2") {
            if let (Some(lo), Some(n)) = (num(x, "lo_ns"), num(x, "count")) {
                if let Some(b) = log2.get_mut(lo.max(1).ilog2() as usize) {
                    *b = n;
                }
            }
        }
        let centred_rows = of("centred");
        let centred = (!centred_rows.is_empty()).then(|| {
            let buckets: Vec<(u64, u64, u64)> = centred_rows
                .iter()
                .filter_map(|x| Some((num(x, "lo_ns")?, num(x, "hi_ns")?, num(x, "count")?)))
                .collect();
            let under =
                centred_rows.iter().find(|x| x[col("lo_ns")].is_empty()).and_then(|x| num(x, "count"));
            let over = centred_rows.iter().find(|x| x[col("hi_ns")].is_empty()).and_then(|x| num(x, "count"));
            let low = buckets.first().map_or(0, |b| b.0);
            let width = buckets.first().map_or(1, |b| b.1.saturating_sub(b.0).max(1));
            CentredJson {
                centre_ns: low + width * CENTRED_SIDE as u64,
                width_ns: width,
                buckets: buckets.iter().map(|b| b.2).collect(),
                under: under.unwrap_or(0),
                over: over.unwrap_or(0),
            }
        });
        let calls = num(r, "count").unwrap_or(0);
        let avg: f64 = r[col("avg_us")].parse().unwrap_or(0.0);
        let max: f64 = r[col("max_us")].parse().unwrap_or(0.0);
        out.push(SpanHistograms {
            span,
            calls,
            total_ns: (avg * 1e3 * calls as f64).round() as u64,
            max_ns: (max * 1e3).round() as u64,
            log2,
            centred_path: (!r[col("path")].is_empty()).then(|| r[col("path")].clone()),
            centred,
        });
    }
    out
}

/// The workloads sampled in `build`'s rows, in the order they ran.
fn workloads(t: &Table, build: &str) -> Vec<String> {
    let mut w: Vec<String> = Vec::new();
    for r in t.select("series", "round").filter(|r| r[col("build")] == build) {
        if !w.contains(&r[1]) {
            w.push(r[1].clone());
        }
    }
    w
}

/// The `round` row of `build`'s `workload`.
fn round_row<'a>(t: &'a Table, build: &str, workload: &str) -> Option<&'a Vec<String>> {
    t.select("series", "round").find(|r| r[col("build")] == build && r[1] == workload)
}

/// A cell of `build`'s rows: `series`, `workload`, `name` → `column`.
fn cell(t: &Table, build: &str, series: &str, workload: &str, name: &str, column: &str) -> Option<f64> {
    t.select("series", series)
        .filter(|r| r[col("build")] == build && r[1] == workload && r[2] == name)
        .find_map(|r| r[col(column)].parse().ok())
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut series = Vec::new();
    for build in t.distinct("build") {
        for w in workloads(t, &build) {
            let pts = Category::ALL
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    Some((i as f64 + 1.0, cell(t, &build, "category", &w, c.name(), "share_pct")?))
                })
                .collect();
            series.push(Series::points(format!("{w} ({build}), the peer under perf"), pts));
        }
    }
    let mut seed: Vec<(f64, f64)> =
        Category::ALL.iter().enumerate().filter_map(|(i, c)| Some((i as f64 + 1.0, c.seed_pct()?))).collect();
    let printed: f64 = CPU_SHARES.iter().map(|s| s.pct).sum();
    seed.push((Category::ALL.len() as f64, 100.0 - printed));
    series.push(Series::seed("seed 003 Fig 5.1, Fabric peer (other: 100 − the printed shares)", seed));
    let mut out = vec![Chart {
        title: "Where a loaded node's CPU goes, by category (seed 003 Fig 5.1)".into(),
        x_label: "category".into(),
        y_label: "share of the CPU samples (%)".into(),
        log_x: false,
        log_y: false,
        x_names: Category::ALL.iter().map(|c| c.name().to_string()).collect(),
        series,
    }];
    if let Some(build) = t.distinct("build").into_iter().last() {
        out.extend(profile::histogram_charts(&histograms_of(t, &build)));
    }
    out
}

fn section(t: &Table) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "A devnet of one peer and one miner (and its bootstrap node) on this machine — seed 003 §6.1 \
         measured \"a single peer with a single orderer\" — held busy through the load benchmark by \
         `fixed-load` rounds (a backlog of unconfirmed transactions kept up), first of 1-input/1-output \
         transfers, then of ElGamal ballots. Linux perf samples the peer (`{SAMPLED}`) from just before \
         each round's offer to the end of its drain: `perf record -e cpu-clock -F {FREQUENCY_HZ} -g -p \
         PID` ({QUICK_FREQUENCY_HZ} Hz in a quick run's one-second rounds; each round's rate is in the \
         table), the CPU time of all its threads, kernel included. Each sample goes to the category of the \
         first frame, innermost first, that a rule of the table (`crates/study/src/exp/cpu.rs`, `RULES`) \
         takes, among the frames perf unwinds reliably: the kernel's and the first of the process (where \
         its code ran, or the system call it made). So a category holds the time spent in its own code \
         (self time, as a flat profile counts it), not in what that code calls.\n\n\
         Seed 003: {}.\n",
        seeds::CPU_SOURCE
    );
    for build in t.distinct("build") {
        let ws = workloads(t, &build);
        let _ = writeln!(s, "**By category** ({build} build)\n");
        s.push_str("| category | seed 003 operation | seed 003 (%) |");
        for w in &ws {
            let _ = write!(s, " {w} (%) |");
        }
        s.push_str("\n|---|---|---:|");
        for _ in &ws {
            s.push_str("---:|");
        }
        s.push('\n');
        let printed: f64 = CPU_SHARES.iter().map(|x| x.pct).sum();
        for c in Category::ALL {
            let (op, seed) = match (c.seed_operation(), c.seed_pct()) {
                (Some(op), Some(p)) => (op.to_string(), format!("{p}")),
                _ => (
                    "others (the rest)".to_string(),
                    format!("{} (100 − the printed shares)", 100.0 - printed),
                ),
            };
            let _ = write!(s, "| {} | {op} | {seed} |", c.name());
            for w in &ws {
                let v = cell(t, &build, "category", w, c.name(), "share_pct");
                let _ = write!(s, " {} |", v.map_or("–".into(), |v| format!("{v:.1}")));
            }
            s.push('\n');
        }
        s.push_str("| samples; throughput (round) | | |");
        for w in &ws {
            let r = round_row(t, &build, w);
            let n = r.map_or("–", |r| r[col("count")].as_str());
            let tps = r.and_then(|r| r[col("tps")].parse::<f64>().ok()).map_or("–".into(), sig4);
            let _ = write!(s, " {n}; {tps} tx/s ({}) |", r.map_or("–", |r| r[col("name")].as_str()));
        }
        s.push_str("\n\n");
        for w in &ws {
            let share = |c: Category| cell(t, &build, "category", w, c.name(), "share_pct").unwrap_or(0.0);
            let part = |name: &str| cell(t, &build, "detail", w, name, "share_pct").unwrap_or(0.0);
            let runtime = share(Category::Runtime);
            let alloc = part(&format!("runtime: {ALLOCATOR}")) + part(&format!("runtime: {MEMORY}"));
            let disk_w = part("disk: write");
            let disk_r = part("disk: read");
            let _ = writeln!(
                s,
                "- {w}: crypto (signatures and hashing) {:.1}% (seed 003: {CPU_CRYPTO_PCT}%, \"32% of total time is \
                 spent on performing cryptographic operations\"); the allocator (malloc and free, the page faults \
                 and mappings under them) {:.1}% of the CPU, {} of the runtime category (seed 003: {CPU_RUNTIME_MALLOC_PCT}% \
                 of its runtime's time in `mallocgc`); the kernel's disk writes {disk_w:.1}% and reads {disk_r:.1}% \
                 (seed 003: {}% and {}%).",
                share(Category::Signatures) + share(Category::Hashing),
                alloc,
                if runtime > 0.0 { format!("{:.0}%", alloc * 100.0 / runtime) } else { "–".into() },
                CPU_DISK_WRITE_READ_PCT.0,
                CPU_DISK_WRITE_READ_PCT.1,
            );
        }
        s.push_str(
            "\nNot like for like, category by category:\n\n\
             - **runtime**: Go's includes its garbage collector (marking, and the sweeping `mallocgc` does \
             as it allocates); we have none. Ours is glibc's allocator (and the kernel's page faults and \
             mappings under it), the async runtime (tokio) and the thread pools (rayon), whose workers' \
             spinning and stealing count here.\n\
             - **locks**: ours include every futex call — a blocked mutex, a condition variable, and a \
             thread pool's worker going to sleep or being woken — which Go's scheduler does in its runtime.\n\
             - **disk**: Fabric's included LevelDB's compaction (40% of its disk writes, seed 003 §5.1.3) and \
             its state, history and block files; ours is the storage engine's own code (fjall, lsm-tree: \
             compaction and journal included) and the kernel's file system and block layer. The node's log \
             file's writes count here too, as Fabric's logger writes did.\n\
             - **compression**: LevelDB compressed with snappy; fjall's blocks use LZ4.\n\
             - **signatures**: Fabric verified ECDSA P-256 signatures (of the client, the endorsers, the \
             orderer); ours are Ed25519 input signatures, checked once on admission (a block's are then found \
             in the signature cache). In a ballot the ElGamal proofs' curve arithmetic is the same code, so it \
             counts here.\n\
             - **serialisation**: Fabric's protobuf; ours is the binary codec of transactions and blocks and \
             the API's JSON.\n\
             - **network**: ours holds the peer protocol (libp2p, its noise encryption and yamux), the HTTP \
             API's server and the kernel's TCP/IP; Fabric's 3% was gRPC's reads and writes.\n\
             - **ledger**: our consensus and mempool rules stand beside Fabric's multiversion concurrency \
             check; they hold more (fees, the pool's graph, conflicts), Fabric's chaincode had its own share \
             in its others.\n\
             - A flat profile: a category holds the samples of its own code. Where perf cannot see who \
             called a memory copy or a hash-map probe (frame pointers are not kept), it lands in other; the \
             largest symbols of other are listed below so the table can be checked.\n\n",
        );
        for w in &ws {
            let _ = writeln!(s, "**Largest unclassified symbols** ({w}, {build} build)\n");
            s.push_str("| symbol | samples | share (%) |\n|---|---:|---:|\n");
            for r in
                t.select("series", "unclassified").filter(|r| r[1] == *w && r[col("build")] == build).take(10)
            {
                let _ = writeln!(s, "| `{}` | {} | {} |", r[2], r[col("count")], r[col("share_pct")]);
            }
            s.push('\n');
        }
    }
    let builds = t.distinct("build");
    if let Some(build) = builds.last() {
        let recorded = t
            .select("series", "recorded")
            .filter(|r| r[col("build")] == *build)
            .find_map(|r| r[col("avg_us")].parse::<f64>().ok())
            .unwrap_or(0.0);
        let _ = writeln!(
            s,
            "**By function over the sustained load** (seed 001 Tables 5 / 8 / 11; {build} build)\n"
        );
        s.push_str(&profile::histogram_section(
            &histograms_of(t, build),
            &format!("the miner (`{PROFILED}`), over all the rounds ({recorded:.0} s recorded)"),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(symbol: &str) -> Frame {
        Frame { symbol: symbol.into(), dso: "/work/target/release/scalechain".into() }
    }

    fn libc(symbol: &str) -> Frame {
        Frame { symbol: symbol.into(), dso: "/usr/lib/x86_64-linux-gnu/libc.so.6".into() }
    }

    fn kernel(symbol: &str) -> Frame {
        Frame { symbol: symbol.into(), dso: "[kernel.kallsyms]".into() }
    }

    fn verdict(frames: &[Frame]) -> (Category, &'static str) {
        let v = classify(frames);
        (v.category, v.detail)
    }

    #[test]
    fn signatures() {
        let s = [user("curve25519_dalek::backend::vector::avx2::field::FieldElement2625x4::mul")];
        assert_eq!(verdict(&s), (Signatures, "ed25519"));
        let generic = [user("<curve25519_dalek::edwards::EdwardsPoint as core::ops::arith::Mul<&curve25519_dalek::scalar::Scalar>>::mul")];
        assert_eq!(verdict(&generic).0, Signatures);
        assert_eq!(verdict(&[user("rustsecp256k1_v0_10_0_ecmult")]), (Signatures, "secp256k1"));
    }

    #[test]
    fn hashing() {
        assert_eq!(verdict(&[user("sha2::sha256::x86::digest_blocks")]), (Hashing, "sha2"));
        assert_eq!(verdict(&[user("blake3_hash_many_avx2")]), (Hashing, "blake3"));
        assert_eq!(verdict(&[user("xxhash_rust::xxh3::xxh3_64_long")]), (Hashing, "checksums"));
    }

    #[test]
    fn serialisation() {
        let codec = [user("<scalechain_types::tx::Tx as scalechain_types::codec::Decode>::decode_from")];
        assert_eq!(verdict(&codec), (Serialisation, "the node's codec"));
        assert_eq!(verdict(&[user("serde_json::de::Deserializer<R>::parse_str")]).0, Serialisation);
        assert_eq!(verdict(&[user("prost::encoding::decode_varint")]), (Serialisation, "protobuf"));
        // The node's own decoders, of any type of any of its crates.
        let ballot = [user("scalechain_voting::elgamal::WireBallot::decode::{{closure}}")];
        assert_eq!(verdict(&ballot), (Serialisation, "the node's codec"));
        assert_eq!(verdict(&[user("scalechain_voting::elgamal::random_scalar")]).0, Category::Other);
    }

    #[test]
    fn disk() {
        assert_eq!(verdict(&[user("lsm_tree::segment::Segment::get")]), (Disk, "engine"));
        assert_eq!(verdict(&[user("fjall::journal::writer::Writer::write_raw")]), (Disk, "engine"));
        // The memtable's skip list is lsm-tree's (nothing else of the node uses it).
        let memtable = [user("crossbeam_skiplist::base::SkipList<K,V>::search_position")];
        assert_eq!(verdict(&memtable), (Disk, "engine"));
        // A buffered write to a file: the file system's frame decides, and the system call under
        // it says it was a write.
        let write = [
            kernel("copy_folio_from_iter_atomic"),
            kernel("generic_perform_write"),
            kernel("ext4_buffered_write_iter"),
            kernel("vfs_write"),
            kernel("ksys_write"),
            kernel("do_syscall_64"),
            libc("__GI___libc_write"),
        ];
        assert_eq!(verdict(&write), (Disk, "write"));
        let read =
            [kernel("filemap_read"), kernel("vfs_read"), kernel("__x64_sys_pread64"), libc("__libc_pread64")];
        assert_eq!(verdict(&read), (Disk, "read"));
        assert_eq!(
            verdict(&[kernel("ext4_sync_file"), kernel("do_fsync"), libc("fdatasync")]),
            (Disk, "write")
        );
    }

    #[test]
    fn compression() {
        assert_eq!(verdict(&[user("lz4_flex::block::compress::compress_internal")]), (Compression, "lz4"));
    }

    #[test]
    fn runtime() {
        assert_eq!(verdict(&[libc("_int_malloc")]), (Runtime, ALLOCATOR));
        assert_eq!(verdict(&[libc("malloc")]), (Runtime, ALLOCATOR));
        assert_eq!(verdict(&[libc("cfree")]), (Runtime, ALLOCATOR));
        assert_eq!(verdict(&[libc("cfree@GLIBC_2.2.5")]), (Runtime, ALLOCATOR));
        assert_eq!(verdict(&[user("__rustc::__rdl_realloc")]), (Runtime, ALLOCATOR));
        assert_eq!(verdict(&[user("alloc::raw_vec::RawVec<T,A>::grow_one")]), (Runtime, ALLOCATOR));
        let fault =
            [kernel("clear_page_erms"), kernel("do_anonymous_page"), kernel("handle_mm_fault"), user("x")];
        assert_eq!(verdict(&fault), (Runtime, MEMORY));
        assert_eq!(
            verdict(&[user("tokio::runtime::scheduler::multi_thread::worker::Context::run")]).1,
            "async runtime"
        );
        assert_eq!(verdict(&[user("rayon_core::registry::WorkerThread::wait_until_cold")]).1, "thread pools");
        assert_eq!(verdict(&[kernel("ep_poll"), kernel("do_epoll_wait"), libc("epoll_wait")]).0, Runtime);
    }

    #[test]
    fn logging() {
        let s = [user("<tracing_subscriber::fmt::format::Format<F,T> as tracing_subscriber::fmt::format::FormatEvent<S,N>>::format_event")];
        assert_eq!(verdict(&s), (Logging, "tracing"));
    }

    #[test]
    fn network() {
        let tcp = [
            kernel("_copy_to_iter"),
            kernel("tcp_recvmsg_locked"),
            kernel("inet_recvmsg"),
            kernel("sock_read_iter"),
            kernel("vfs_read"),
            libc("read"),
        ];
        assert_eq!(verdict(&tcp), (Network, "kernel TCP/IP"));
        assert_eq!(
            verdict(&[user("libp2p_gossipsub::behaviour::Behaviour<D,F>::handle_received_message")]).0,
            Network
        );
        assert_eq!(verdict(&[user("snow::cipherstate::CipherState::encrypt_ad")]).1, "transport encryption");
        assert_eq!(verdict(&[user("hyper::proto::h1::role::Server::parse")]).1, "HTTP API");
        // A crate's path counts where a path starts, not at the end of another name.
        assert_eq!(verdict(&[user("alloc::string::String::push_str")]).0, Category::Other);
        assert_eq!(verdict(&[user("scalechain_types::seqlog::SeqLog::push")]).0, Category::Other);
        assert_eq!(verdict(&[user("<ring::aead::LessSafeKey as core::fmt::Debug>::fmt")]).0, Network);
    }

    #[test]
    fn locks() {
        assert_eq!(verdict(&[user("parking_lot::raw_rwlock::RawRwLock::lock_shared_slow")]).0, Locks);
        assert_eq!(verdict(&[user("std::sys::sync::mutex::futex::Mutex::lock_contended")]).0, Locks);
        // A futex wait: the scheduler's frames pass the decision on to the futex.
        let wait = [
            kernel("finish_task_switch.isra.0"),
            kernel("__schedule"),
            kernel("schedule"),
            kernel("futex_wait_queue"),
            kernel("__x64_sys_futex"),
            libc("syscall"),
        ];
        assert_eq!(verdict(&wait), (Locks, "kernel futex"));
        assert_eq!(verdict(&[libc("__lll_lock_wait_private")]).0, Locks);
    }

    #[test]
    fn ledger() {
        assert_eq!(verdict(&[user("scalechain_consensus::txverify::check_inputs")]), (Ledger, "consensus"));
        assert_eq!(verdict(&[user("scalechain_mempool::pool::Pool::insert")]), (Ledger, "mempool"));
    }

    #[test]
    fn other_and_the_frames_that_count() {
        // No rule: other, named by the process's frame.
        let v = classify(&[libc("__memmove_avx_unaligned_erms"), user("scalechain_types::codec::x")]);
        assert_eq!((v.category, v.symbol.as_str()), (Category::Other, "__memmove_avx_unaligned_erms"));
        // Frames past the first of the process are not trusted: the codec two frames out does not
        // take the sample.
        let v = classify(&[user("hashbrown::raw::RawTable<T,A>::find"), user("scalechain_types::codec::x")]);
        assert_eq!(v.category, Category::Other);
        // A kernel sample no rule takes is named by the process's frame it ran for.
        let v = classify(&[kernel("syscall_exit_to_user_mode"), libc("__GI___libc_write"), user("tokio::x")]);
        assert_eq!((v.category, v.symbol.as_str()), (Category::Other, "__GI___libc_write (in the kernel)"));
        // A preempted process: the kernel's frames take nothing, the interrupted frame decides.
        let v = classify(&[kernel("__schedule"), kernel("irqentry_exit_to_user_mode"), user("sha2::x")]);
        assert_eq!(v.category, Hashing);
        // An unknown frame is named by its binary.
        let v = classify(&[Frame { symbol: "[unknown]".into(), dso: "/usr/lib/libfoo.so".into() }]);
        assert_eq!(v.symbol, "[unknown] in libfoo.so");
        // The rules are for their own space: a kernel frame named like a crate is not the crate's.
        assert_eq!(verdict(&[kernel("tokio::nothing")]).0, Category::Other);
        assert_eq!(verdict(&[user("tcp_sendmsg")]).0, Category::Other);
    }

    #[test]
    fn every_category_has_a_rule_and_a_seed_share_but_other() {
        for c in Category::ALL {
            assert_eq!(RULES.iter().any(|r| r.category == c), c != Category::Other, "{c:?}");
            assert_eq!(c.seed_pct().is_some(), c != Category::Other, "{c:?}");
        }
        assert_eq!(Category::Signatures.seed_pct(), Some(20.0));
        assert_eq!(Category::Ledger.seed_pct(), Some(1.0));
    }

    const SCRIPT: &str = "\
scalechain 101 
\tffffffff81c80c24 tcp_sendmsg ([kernel.kallsyms])
\tffffffff816d676c sock_write_iter ([kernel.kallsyms])
\t           f8350 __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)

tokio-runtime-w 102 
\t    55d0c0ffee10 <curve25519_dalek::edwards::EdwardsPoint as core::ops::arith::Mul<&curve25519_dalek::scalar::Scalar>>::mul (/opt/scalechain)
\t    55d0c0ffee99 [unknown] ([unknown])

rayon 103 
\t    55d0c0ff0000 _int_malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)

rayon 103 
\t    55d0c0ff0001 hashbrown::raw::RawTable<T,A>::reserve_rehash (/opt/scalechain)
";

    #[test]
    fn perf_script_output_is_read_sample_by_sample() {
        let t = Tally::read(SCRIPT.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.samples, 4);
        for c in [Network, Signatures, Runtime, Category::Other] {
            assert_eq!(t.categories.get(&c), Some(&1), "{c:?}");
        }
        assert_eq!(t.pct(Network), 25.0);
        assert_eq!(
            t.top(Category::Other, 5),
            vec![("hashbrown::raw::RawTable<T,A>::reserve_rehash".into(), 1)]
        );
        // A frame with nothing around it is refused.
        assert!(Tally::read("\tffff x (y)\n".as_bytes()).is_err());
        assert!(Tally::read("t 1\n\tnot-a-frame\n".as_bytes()).is_err());
        assert_eq!(
            parse_frame("\t 55d0 f(a (b)) (/bin/x)"),
            Some(Frame { symbol: "f(a (b))".into(), dso: "/bin/x".into() })
        );
    }

    fn tally_of(cats: &[(Category, &'static str, &str, u64)]) -> Tally {
        let mut t = Tally::default();
        for (c, d, s, n) in cats {
            t.samples += n;
            *t.categories.entry(*c).or_default() += n;
            *t.details.entry((*c, *d)).or_default() += n;
            *t.symbols.entry(*c).or_default().entry(s.to_string()).or_default() += n;
        }
        t
    }

    fn hist() -> SpanHistograms {
        let mut log2 = vec![0u64; 40];
        log2[10] = 5;
        log2[12] = 95;
        log2[20] = 1;
        let mut buckets = vec![0u64; 100];
        buckets[50] = 80;
        buckets[10] = 10;
        SpanHistograms {
            span: "mempool.judge".into(),
            calls: 101,
            total_ns: 101 * 4_000,
            max_ns: 1_048_000,
            log2,
            centred_path: Some("pipeline.verify -> mempool.offer -> mempool.judge".into()),
            centred: Some(CentredJson { centre_ns: 4_000, width_ns: 80, buckets, under: 0, over: 10 }),
        }
    }

    #[test]
    fn the_report_sets_our_shares_beside_the_seeds_and_lists_what_no_rule_took() {
        let transfer = tally_of(&[
            (Signatures, "ed25519", "curve25519_dalek::x", 40),
            (Hashing, "sha2", "sha2::x", 10),
            (Runtime, ALLOCATOR, "_int_malloc", 15),
            (Runtime, "async runtime", "tokio::x", 5),
            (Disk, "write", "ext4_x", 4),
            (Disk, "read", "filemap_read", 1),
            (Category::Other, "unclassified", "__memmove_avx_unaligned_erms", 25),
        ]);
        let ballot = tally_of(&[
            (Signatures, "ed25519", "curve25519_dalek::x", 90),
            (Locks, "kernel futex", "futex_wait", 10),
        ]);
        let mut t = Table::new(COLUMNS);
        t.rows.extend(tally_rows(
            &transfer,
            "transfer",
            "fixed-load 200 at 499 Hz",
            1234.4,
            "portable",
            "c0ffee",
        ));
        t.rows.extend(tally_rows(
            &ballot,
            "ballot-elgamal",
            "fixed-load 50 at 499 Hz",
            99.0,
            "portable",
            "c0ffee",
        ));
        t.rows.extend(histogram_rows(&[hist()], 12.0, "portable", "c0ffee"));
        // Every category has a row per round, and they sum to 100%.
        for w in ["transfer", "ballot-elgamal"] {
            let sum: f64 = Category::ALL
                .iter()
                .filter_map(|c| cell(&t, "portable", "category", w, c.name(), "share_pct"))
                .sum();
            assert!((sum - 100.0).abs() < 0.05, "{w}: {sum}");
        }
        // The CSV round trip keeps everything the report reads.
        let back = Table::from_csv(&t.to_csv()).unwrap_or_else(|| panic!("not a table"));
        assert_eq!(back, t);
        let s = section(&back);
        assert!(s.contains("| signatures | signature verification | 20 | 40.0 | 90.0 |"), "{s}");
        assert!(
            s.contains("| other | others (the rest) | 12 (100 − the printed shares) | 25.0 | 0.0 |"),
            "{s}"
        );
        assert!(
            s.contains("| samples; throughput (round) | | | 100; 1234 tx/s (fixed-load 200 at 499 Hz) | 100; 99.00 tx/s (fixed-load 50 at 499 Hz) |"),
            "{s}"
        );
        // Crypto 50%; the allocator 15% of the CPU, 75% of the runtime's 20%; disk 4% and 1%.
        assert!(s.contains("- transfer: crypto (signatures and hashing) 50.0%"), "{s}");
        assert!(s.contains("15.0% of the CPU, 75% of the runtime category"), "{s}");
        assert!(s.contains("disk writes 4.0% and reads 1.0% (seed 003: 4% and 1%)"), "{s}");
        assert!(s.contains("| `__memmove_avx_unaligned_erms` | 25 | 25.00 |"), "{s}");
        // The long profile: the span beside seed 001's averages, 10 of 100 runs past the range.
        assert!(s.contains("| AcceptToMemoryPoolWorker | 397 / 438 / 405 | `mempool.judge` | 101 | 4.000 | 1048 | 3 | 4.000 | 100 | 0.0% | 10.0% |"), "{s}");
        assert!(s.contains("10.0% of the 100 runs of `mempool.judge`"), "{s}");
        assert!(s.contains(seeds::PROFILE_HISTOGRAM_SPIKES), "{s}");
        let c = charts(&back);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].series.len(), 3, "two workloads and the seed");
        assert!(
            c[0].series[2].points.contains(&(1.0, 20.0)) && c[0].series[2].points.contains(&(11.0, 12.0))
        );
        assert_eq!(c[1].series[0].points.len(), 11, "log2 buckets 2^10 to 2^20");
        assert_eq!(c[2].series[0].points.len(), 100);
        // The histograms come back from the CSV as recorded.
        assert_eq!(histograms_of(&back, "portable"), vec![hist()]);
    }

    #[test]
    fn cells_keep_the_csv_and_the_markdown_whole() {
        assert_eq!(csv_cell("<HashMap<K, V> as Fn|x>"), "<HashMap<K; V> as Fn¦x>");
        assert_eq!(csv_cell(&"x".repeat(300)).chars().count(), 160);
    }

    #[test]
    fn perf_that_is_refused_says_why() {
        use std::os::unix::process::ExitStatusExt;
        let status = std::process::ExitStatus::from_raw(255 << 8);
        let e = perf_failed(
            "record",
            status,
            "Error:\nAccess to performance monitoring and observability operations is limited.",
        );
        assert!(matches!(e, PerfError::Refused { .. }), "{e}");
        assert!(e.to_string().contains("perf_event_paranoid"), "{e}");
        assert!(matches!(perf_failed("script", status, "something else"), PerfError::Failed { .. }));
    }

    #[test]
    fn the_quick_load_is_short_and_the_full_one_minutes_long() {
        let q: u64 = loads(true).iter().map(|l| l.secs).sum();
        let f: u64 = loads(false).iter().map(|l| l.secs).sum();
        assert!(q <= 2 && f >= 120, "{q} {f}");
        assert!(rounds(&loads(false)).iter().all(|r| matches!(r.rate, Rate::FixedLoad { .. })));
    }
}
