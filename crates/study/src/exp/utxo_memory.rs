//! `utxo-memory`: resident memory per unspent output of the in-memory UTXO set at 10M outputs
//! (100k with `--quick`), beside a plain `std::collections::HashMap<OutPoint, Coin>` built from
//! the same outputs. Each structure is built, measured (resident-set growth and the
//! structure's own heap accounting), timed for inserts and lookups, and dropped before the next.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use scalechain_consensus::{Coin, UtxoSet, UtxoView};
use std::fmt::Write as _;

use scalechain_lab::machine::rss_kib;
use scalechain_lab::output::{sig4, Target};
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::{Amount, Hash, HashKind, Lock, OutPoint, Scheme, TxOut};

use crate::{Ctx, Experiment, StudyError};

/// Columns of `utxo-memory.csv`.
pub const COLUMNS: &[&str] = &[
    "structure",
    "outputs",
    "build",
    "rss_bytes_per_output",
    "heap_bytes_per_output",
    "insert_ns",
    "lookup_ns",
    "commit",
    "seed",
];

/// The target: bytes per unspent output at 10M outputs.
pub const TARGET_BYTES: f64 = 128.0;

fn output(i: u64) -> (OutPoint, Coin) {
    let txid = HashKind::Blake3.hash(&i.to_le_bytes());
    let op = OutPoint { txid, index: (i % 3) as u32 };
    let out = TxOut {
        value: Amount::new(i % 1_000_000 + 1).unwrap_or(Amount::MAX),
        lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash(txid.0) },
    };
    (op, Coin { out, height: i / 1000, coinbase: i.is_multiple_of(50) })
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let n: u64 = if ctx.opts.quick { 100_000 } else { 10_000_000 };
    ctx.start(2, "UtxoSet");
    let mut table = Table::new(COLUMNS);
    let lookups = n.min(1_000_000);
    let mut push = |name: &str, rss: f64, heap: f64, ins: f64, look: f64| {
        table.push(vec![
            name.into(),
            n.to_string(),
            ctx.machine.build.into(),
            format!("{rss:.1}"),
            format!("{heap:.1}"),
            format!("{ins:.1}"),
            format!("{look:.1}"),
            ctx.machine.commit.into(),
            ctx.opts.seed.to_string(),
        ]);
        ctx.progress.inc(1);
    };
    {
        let before = rss_kib().unwrap_or(0);
        let t = Instant::now();
        let mut set = UtxoSet::new();
        for i in 0..n {
            let (op, c) = output(i);
            set.insert(op, c);
        }
        let ins = t.elapsed().as_secs_f64() * 1e9 / n as f64;
        let rss = (rss_kib().unwrap_or(0).saturating_sub(before) * 1024) as f64 / n as f64;
        let heap = set.heap_bytes() as f64 / n as f64;
        let t = Instant::now();
        for i in 0..lookups {
            black_box(set.coin(&output(i * 7 % n).0));
        }
        let look = t.elapsed().as_secs_f64() * 1e9 / lookups as f64;
        if set.len() as u64 != n {
            return Err(StudyError::Wrong(format!("UtxoSet holds {} of {n} outputs", set.len())));
        }
        push("UtxoSet", rss, heap, ins, look);
    }
    ctx.progress.set_message("std HashMap");
    {
        let before = rss_kib().unwrap_or(0);
        let t = Instant::now();
        let mut map: HashMap<OutPoint, Coin> = HashMap::new();
        for i in 0..n {
            let (op, c) = output(i);
            map.insert(op, c);
        }
        let ins = t.elapsed().as_secs_f64() * 1e9 / n as f64;
        let rss = (rss_kib().unwrap_or(0).saturating_sub(before) * 1024) as f64 / n as f64;
        let entry = std::mem::size_of::<(OutPoint, Coin)>() + 1;
        let heap = (map.capacity() * 8 / 7).next_power_of_two() as f64 * entry as f64 / n as f64;
        let t = Instant::now();
        for i in 0..lookups {
            black_box(map.get(&output(i * 7 % n).0));
        }
        let look = t.elapsed().as_secs_f64() * 1e9 / lookups as f64;
        push("std HashMap", rss, heap, ins, look);
    }
    ctx.finish(Experiment::UtxoMemory, &table, charts, section)
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let names: Vec<String> = t.rows.iter().map(|r| format!("{} ({})", r[0], r[2])).collect();
    let series = t
        .rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            Some(Series::points(names[i].clone(), vec![(i as f64 + 1.0, t.num(r, "rss_bytes_per_output")?)]))
        })
        .chain(std::iter::once(Series::line(
            format!("target (≤ {TARGET_BYTES} B)"),
            vec![(0.5, TARGET_BYTES), (t.rows.len() as f64 + 0.5, TARGET_BYTES)],
        )))
        .collect();
    vec![Chart {
        title: "Resident bytes per unspent output".into(),
        x_label: "structure (build)".into(),
        y_label: "bytes / output".into(),
        log_x: false,
        log_y: false,
        x_names: names,
        series,
    }]
}

fn section(t: &Table) -> String {
    let mut s = format!(
        "Resident-set growth while building each structure, per output (the target is ≤ {TARGET_BYTES} B \
         at 10M outputs), and the structure's own heap accounting. The std row is an estimate from \
         its capacity (hashbrown buckets × entry + control byte). Lookups draw existing outpoints.\n\n"
    );
    s.push_str(&t.markdown(&COLUMNS[..7]));
    let target = Target::AtMost(TARGET_BYTES);
    for r in t.select("structure", "UtxoSet") {
        if let (Some(b), Some(n)) = (t.num(r, "rss_bytes_per_output"), t.num(r, "outputs")) {
            let _ = write!(
                s,
                "\n`UtxoSet` at {} outputs: {} B per output against the target {} B.\n",
                sig4(n),
                target.cell(&format!("{b:.1}"), b),
                target.text()
            );
        }
    }
    s
}
