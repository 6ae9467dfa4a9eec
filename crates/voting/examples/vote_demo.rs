//! Runs `demo::run` from the command line until the CLI's `vote demo` is wired:
//! `cargo run --release -p scalechain-voting --example vote_demo -- [scheme] [voters] [candidates] [invalid] [seed]`
//! (defaults: paillier 1000 4 14 1). Prints the report's JSON; exits 1 if the tally is wrong, a
//! proof fails or an invalid ballot got through.

use scalechain_voting::demo::{run, DemoOpts};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let parsed = (|| -> Result<DemoOpts, String> {
        Ok(DemoOpts {
            scheme: arg(0, "paillier").parse()?,
            voters: arg(1, "1000").parse().map_err(|e| format!("voters: {e}"))?,
            candidates: arg(2, "4").parse().map_err(|e| format!("candidates: {e}"))?,
            invalid: arg(3, "14").parse().map_err(|e| format!("invalid: {e}"))?,
            seed: arg(4, "1").parse().map_err(|e| format!("seed: {e}"))?,
        })
    })();
    let opts = match parsed {
        Ok(o) => o,
        Err(e) => {
            eprintln!("usage: vote_demo [elgamal|paillier] [voters] [candidates] [invalid] [seed]: {e}");
            std::process::exit(2);
        }
    };
    match run(&opts) {
        Ok(r) => {
            println!("{}", r.json());
            let ok = r.tally == r.expected && r.verified && r.rejected_invalid == r.invalid_cast;
            std::process::exit(if ok { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("demo failed: {e}");
            std::process::exit(2);
        }
    }
}
