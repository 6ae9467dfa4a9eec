//! What a run of the study or the load benchmark ran on: CPU model, cores, relevant
//! instruction-set flags, the build (portable or `-C target-cpu=native`), the commit, and the
//! load average before and after.

use std::fmt::Write as _;

/// The machine and build of a run.
#[derive(Clone, Debug)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// Flags that matter for the crypto and hashing code, present on this CPU.
    pub flags: Vec<String>,
    /// `portable` or `native`, perhaps with ` soft-sha256` (see [`build`]).
    pub build: &'static str,
    /// The Ed25519 and SHA-256 backends selected on this CPU
    /// ([`scalechain_types::keys::backends`]).
    pub backends: String,
    /// Commit the binary was built from.
    pub commit: &'static str,
    /// 1-minute load average when the run started.
    pub load_start: Option<f64>,
}

/// Flags reported (the Ed25519 backends use AVX2 or AVX-512 IFMA; SHA-NI accelerates SHA-256).
const INTERESTING: &[&str] = &["avx2", "avx512f", "avx512vl", "avx512ifma", "sha_ni", "bmi2", "adx"];

/// `native` when the binary was compiled for this CPU's features (`-C target-cpu=native`
/// enables AVX2 at compile time), else `portable` (the x86-64 baseline; the crypto crates then
/// pick SIMD backends at run time where they can); with ` soft-sha256` when SHA-256 was built
/// without its CPU backends (`--cfg sha2_backend="soft"`: no SHA-NI), and with ` ed25519-avx2`
/// when Ed25519's AVX-512 IFMA backend was left out (`RUSTFLAGS` without the workspace's
/// `--cfg curve25519_dalek_backend="avx512"`, on a target CPU without IFMA): it then verifies on
/// AVX2. The study's `backend` experiment compares these builds.
pub fn build() -> &'static str {
    let ifma = cfg!(curve25519_dalek_backend = "avx512")
        || (cfg!(target_feature = "avx512ifma") && cfg!(target_feature = "avx512vl"));
    match (cfg!(target_feature = "avx2"), cfg!(sha2_backend = "soft"), ifma) {
        (true, false, true) => "native",
        (false, false, true) => "portable",
        (true, true, true) => "native soft-sha256",
        (false, true, true) => "portable soft-sha256",
        (true, false, false) => "native ed25519-avx2",
        (false, false, false) => "portable ed25519-avx2",
        (true, true, false) => "native soft-sha256 ed25519-avx2",
        (false, true, false) => "portable soft-sha256 ed25519-avx2",
    }
}

/// The commit recorded at build time (`unknown` outside a git checkout).
pub fn commit() -> &'static str {
    option_env!("SCALECHAIN_COMMIT").unwrap_or("unknown")
}

/// The 1-minute load average, on Linux.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// Peak resident memory of this process so far, KiB (`VmHWM`, Linux).
pub fn peak_rss_kib() -> Option<u64> {
    status_field("VmHWM:")
}

/// Current resident memory of this process, KiB (`VmRSS`, Linux).
pub fn rss_kib() -> Option<u64> {
    status_field("VmRSS:")
}

fn status_field(name: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Machine {
    /// Describes this machine now.
    pub fn detect() -> Machine {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let cpu = field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let present = field("flags").unwrap_or_default();
        let present: Vec<&str> = present.split_whitespace().collect();
        let flags = INTERESTING.iter().filter(|f| present.contains(f)).map(|f| f.to_string()).collect();
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            flags,
            build: build(),
            backends: scalechain_types::keys::backends(),
            commit: commit(),
            load_start: load_average(),
        }
    }

    /// A Markdown description, with the load average now as the end load.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let load = |l: Option<f64>| l.map_or("n/a".to_string(), |l| format!("{l:.2}"));
        let _ = writeln!(s, "| machine | |\n|---|---|");
        let _ = writeln!(s, "| CPU | {} |", self.cpu);
        let _ = writeln!(s, "| logical cores | {} |", self.cores);
        let _ = writeln!(s, "| flags | {} |", self.flags.join(" "));
        let _ = writeln!(s, "| build | {} |", self.build);
        let _ = writeln!(s, "| backends (run time) | {} |", self.backends);
        let _ = writeln!(s, "| commit | `{}` |", self.commit);
        let _ = writeln!(
            s,
            "| load (1 min) at start / end | {} / {} |",
            load(self.load_start),
            load(load_average())
        );
        s
    }
}
