//! The laboratory harness: it runs local networks of `scalechain node` processes and measures
//! them. `scalechain bench`, `scalechain devnet`, the shell's `load` and the study's network
//! experiments are compositions of its parts.
//!
//! - [`launcher`]: the local-network launcher (node processes, their logs, their clients, clean
//!   stops on drop and on Ctrl-C; network namespaces and emulated wide-area links for the
//!   experiments), with [`interrupt`], the process-wide Ctrl-C flag its waits check;
//! - [`load`]: the load generator — transactions prepared and signed before the clock starts,
//!   offered to running nodes at a controlled rate, and what the network made of them (devnet's
//!   summary, CPU and memory of the nodes);
//! - [`bench`]: the load benchmark — its file, its runner, a round's measurements and the
//!   report (CSV, Markdown, HTML, JSON);
//! - [`machine`]: what a run ran on (CPU, cores, flags, build, commit, load average), which every
//!   report records;
//! - [`output`] and [`plot`]: results on disk (CSV tables merged across builds, sections of
//!   `report.md`) and SVG charts, shared with the study's experiments;
//! - [`LabError`]: what can go wrong writing them.
//!
//! The harness knows no experiment: the study depends on it, never the reverse, and the node
//! does not depend on it (the `/proc` reader both use is `scalechain-procfs`). Everything that
//! talks to a node does it through the API client of `scalechain-client`.

pub mod bench;
pub mod interrupt;
pub mod launcher;
pub mod load;
pub mod machine;
pub mod output;
pub mod plot;

use std::path::{Path, PathBuf};

pub use machine::Machine;
pub use output::Table;

/// What can go wrong writing the harness's results.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The plot could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
}

impl LabError {
    /// An IO error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> LabError {
        LabError::Io { path: path.to_path_buf(), source }
    }
}
