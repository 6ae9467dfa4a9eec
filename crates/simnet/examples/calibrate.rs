//! Measures the simulator's cost model on this machine and prints it as TOML (the form of
//! `crates/simnet/calibration.toml`).
//!
//! `cargo run --release -p scalechain-simnet --example calibrate -- [SOURCE]`
//! (SOURCE: a description of the machine and build, written into the model).

fn main() {
    let source = std::env::args().nth(1).unwrap_or_else(|| "this machine".into());
    match scalechain_simnet::calibrate(1024, 7, &source) {
        Ok(m) => print!("{}", m.to_toml()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
