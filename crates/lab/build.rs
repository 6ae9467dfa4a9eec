//! Records the commit the harness is built from (`SCALECHAIN_COMMIT`), which `machine::commit`
//! reads and every report of the study and the load benchmark names.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    let commit = if dirty { format!("{commit}-dirty") } else { commit };
    println!("cargo:rustc-env=SCALECHAIN_COMMIT={commit}");
    for f in ["../../.git/HEAD", "../../.git/index"] {
        println!("cargo:rerun-if-changed={f}");
    }
}
