//! Ctrl-C and SIGTERM as a flag: once [`install`]ed (the launcher does it), the first SIGINT or
//! SIGTERM sets a process-wide flag that the launcher's waits and long loops (devnet's load,
//! convergence) check, so they end and the launcher stops its processes and removes its
//! temporary directory; a second signal, while the first is being handled, ends the process at
//! once with the usual status (130 for SIGINT, 143 for SIGTERM).
//!
//! The flag is only read and set: nothing here runs code in the signal handler itself (that is
//! `signal-hook`'s job, with an async-signal-safe store).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};

static FLAG: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Installs the handlers (once per process; later calls return the first result).
pub fn install() -> Result<(), String> {
    INSTALLED
        .get_or_init(|| {
            for (sig, status) in [(SIGINT, 130), (SIGTERM, 143)] {
                // First the exit on a second signal (it tests the flag before the next handler
                // sets it), then the flag.
                signal_hook::flag::register_conditional_shutdown(sig, status, FLAG.clone())
                    .and_then(|_| signal_hook::flag::register(sig, FLAG.clone()))
                    .map_err(|e| format!("installing the handler of signal {sig}: {e}"))?;
            }
            Ok(())
        })
        .clone()
}

/// Has an interrupt been requested?
pub fn requested() -> bool {
    FLAG.load(Ordering::SeqCst)
}

/// The flag itself, for loops that take a stop flag.
pub fn flag() -> &'static AtomicBool {
    &FLAG
}
