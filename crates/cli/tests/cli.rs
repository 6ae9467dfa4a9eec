//! Black-box tests of the `scalechain` binary: simulate, info, verify, export/import round trip,
//! tampered and foreign exports, the DOT picture, and crash recovery under SIGKILL.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scalechain"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn info(dir: &Path) -> Value {
    serde_json::from_str(&ok(&["chain", "info", "--data-dir", dir.to_str().unwrap(), "--json"])).unwrap()
}

fn simulate(dir: &Path, blocks: u64, txs: u64, extra: &[&str]) {
    let (b, t) = (blocks.to_string(), txs.to_string());
    let mut args =
        vec!["simulate", "--data-dir", dir.to_str().unwrap(), "--blocks", &b, "--txs-per-block", &t];
    args.extend_from_slice(extra);
    ok(&args);
}

fn export(dir: &Path, file: &Path) {
    ok(&[
        "chain",
        "export",
        "--data-dir",
        dir.to_str().unwrap(),
        "--format",
        "json",
        "-o",
        file.to_str().unwrap(),
    ]);
}

#[test]
fn simulate_export_import_round_trip_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    simulate(&a, 12, 40, &["--sig", "mixed", "--hash", "sha512_256"]);
    let ia = info(&a);
    assert_eq!(ia["tip_height"], 12);
    assert_eq!(ia["hash"], "sha512_256");
    ok(&["chain", "verify", "--data-dir", a.to_str().unwrap()]);
    let file = tmp.path().join("a.json");
    export(&a, &file);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["params"]["chain_id"], ia["chain_id"]);
    assert_eq!(doc["blocks"].as_array().unwrap().len(), 13);
    assert!(doc["blocks"][1]["txs"][1]["outputs"][0]["value"].is_u64());
    ok(&["chain", "import", "--data-dir", b.to_str().unwrap(), file.to_str().unwrap()]);
    let ib = info(&b);
    for k in ["chain_id", "tip_hash", "tip_height", "utxo_count", "total_value"] {
        assert_eq!(ia[k], ib[k], "{k}");
    }
    ok(&["chain", "verify", "--data-dir", b.to_str().unwrap(), "--mode", "sequential"]);
    // Importing again changes nothing.
    ok(&["chain", "import", "--data-dir", b.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(info(&b)["tip_hash"], ia["tip_hash"]);
}

#[test]
fn genesis_depends_only_on_hash_and_sig() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
    simulate(&a, 3, 5, &["--seed", "1"]);
    simulate(&b, 5, 9, &["--seed", "2"]);
    simulate(&c, 3, 5, &["--seed", "1", "--hash", "blake3"]);
    let (ia, ib, ic) = (info(&a), info(&b), info(&c));
    assert_eq!(ia["chain_id"], ib["chain_id"]);
    assert_ne!(ia["tip_hash"], ib["tip_hash"]);
    assert_ne!(ia["chain_id"], ic["chain_id"]);
    // A file of another chain is refused.
    let file = tmp.path().join("c.json");
    export(&c, &file);
    let out = run(&["chain", "import", "--data-dir", a.to_str().unwrap(), file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds chain"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(info(&a)["tip_hash"], ia["tip_hash"]);
}

#[test]
fn tampered_exports_are_refused_with_a_located_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    simulate(&a, 5, 10, &[]);
    let file = tmp.path().join("a.json");
    export(&a, &file);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();

    // 1. A field that disagrees with raw.
    let mut d = doc.clone();
    let v = d["blocks"][3]["txs"][2]["outputs"][0]["value"].as_u64().unwrap();
    d["blocks"][3]["txs"][2]["outputs"][0]["value"] = (v + 1).into();
    let err = import_err(tmp.path(), "t1", &d);
    assert!(err.contains("block 3") && err.contains("txs[2].outputs[0].value"), "{err}");

    // 2. A signature flipped in raw (and in its field, so the document is self-consistent):
    //    consensus rejects it, naming block, tx and rule.
    let mut d = doc.clone();
    let tx = &mut d["blocks"][4]["txs"][1];
    let sig = tx["inputs"][0]["signature"].as_str().unwrap().to_string();
    let mut flipped = sig.clone();
    flipped.replace_range(0..2, if &sig[0..2] == "00" { "01" } else { "00" });
    tx["inputs"][0]["signature"] = flipped.clone().into();
    let raw = tx["raw"].as_str().unwrap().replace(&sig, &flipped);
    tx["raw"] = raw.into();
    tx["wtxid"] = Value::Null; // recomputed below
    let bytes = hex_decode(tx["raw"].as_str().unwrap());
    tx["wtxid"] = wtxid_sha256(&bytes).into();
    // The Merkle root commits to the full encoding, so the header no longer matches.
    let err = import_err(tmp.path(), "t2", &d);
    assert!(err.starts_with("error: block 4 ") && err.contains("bad-merkle-root"), "{err}");

    // 3. Params that do not match the stated chain id.
    let mut d = doc;
    d["params"]["coinbase_maturity"] = 3.into();
    let err = import_err(tmp.path(), "t3", &d);
    assert!(err.contains("chain_id"), "{err}");
}

#[test]
fn an_import_that_leaves_blocks_unconnected_fails_and_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    // Two simulations with the same hash and signature modes share genesis and fork after it.
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    simulate(&a, 10, 5, &[]);
    simulate(&b, 10, 5, &["--seed", "9"]);
    let (fa, fb) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    export(&a, &fa);
    export(&b, &fb);
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&fa).unwrap()).unwrap();
    let other: Value = serde_json::from_str(&std::fs::read_to_string(&fb).unwrap()).unwrap();
    // The eighth block of the file comes from the other chain: its parent is in neither.
    doc["blocks"][8] = other["blocks"][8].clone();
    let foreign = other["blocks"][8]["hash"].as_str().unwrap().to_string();
    // Block 9 of the file lost its parent to that block, and block 10 waits for block 9.
    let err = import_err(tmp.path(), "mixed", &doc);
    assert!(err.contains("3 block(s)"), "{err}");
    let line = |h: usize| err.lines().find(|l| l.contains(&format!("block {h} "))).unwrap_or_default();
    assert!(line(8).contains(&foreign) && line(8).contains("neither in the store nor in the file"), "{err}");
    assert!(line(9).contains("neither in the store nor in the file"), "{err}");
    assert!(line(10).contains("did not connect either"), "{err}");
    // Blocks out of order (a child before its parent) still connect: exit 0.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&fa).unwrap()).unwrap();
    doc["blocks"].as_array_mut().unwrap().swap(4, 5);
    let file = tmp.path().join("swapped.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = ok(&[
        "chain",
        "import",
        "--data-dir",
        tmp.path().join("s").to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(out.contains("0 orphans left (1 seen)"), "{out}");
}

fn import_err(tmp: &Path, name: &str, doc: &Value) -> String {
    let file = tmp.join(format!("{name}.json"));
    std::fs::write(&file, doc.to_string()).unwrap();
    let out =
        run(&["chain", "import", "--data-dir", tmp.join(name).to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "import must fail with exit code 1");
    String::from_utf8(out.stderr).unwrap()
}

fn hex_decode(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn wtxid_sha256(bytes: &[u8]) -> String {
    scalechain_types::HashKind::Sha256.hash(bytes).to_string()
}

#[test]
fn dot_export_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    simulate(&a, 4, 6, &[]);
    let out = ok(&[
        "chain",
        "export",
        "--data-dir",
        a.to_str().unwrap(),
        "--format",
        "dot",
        "--from",
        "1",
        "--to",
        "3",
    ]);
    assert!(out.starts_with("digraph"));
    assert_eq!(out.matches("subgraph cluster_").count(), 3);
    assert_eq!(out.matches("color=green").count(), 2);
    let have_dot = Command::new("dot").arg("-V").output().is_ok();
    if !have_dot {
        assert!(std::env::var("CI").is_err(), "CI must have graphviz installed");
        return;
    }
    let mut child =
        Command::new("dot").arg("-Tsvg").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(out.as_bytes()).unwrap();
    let r = child.wait_with_output().unwrap();
    assert!(r.status.success());
    assert!(String::from_utf8_lossy(&r.stdout).contains("<svg"));
}

#[test]
fn sigkill_during_import_recovers_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    simulate(&a, 30, 150, &[]);
    let want = info(&a);
    let file = tmp.path().join("a.json");
    export(&a, &file);
    let c = tmp.path().join("c");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut heights = Vec::new();
    for _ in 0..6 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = bin()
            .args(["chain", "import", "--data-dir", c.to_str().unwrap(), file.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50 + seed % 700));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Whatever was committed reopens, verifies, and is a prefix of the real chain.
        let out = run(&["chain", "info", "--data-dir", c.to_str().unwrap(), "--json"]);
        if out.status.success() {
            let i: Value = serde_json::from_slice(&out.stdout).unwrap();
            heights.push(i["tip_height"].as_u64().unwrap());
            ok(&["chain", "verify", "--data-dir", c.to_str().unwrap()]);
        }
    }
    assert!(heights.windows(2).all(|w| w[0] <= w[1]), "committed height never goes back: {heights:?}");
    ok(&["chain", "import", "--data-dir", c.to_str().unwrap(), file.to_str().unwrap()]);
    let got = info(&c);
    for k in ["tip_hash", "utxo_count", "total_value"] {
        assert_eq!(want[k], got[k], "{k}");
    }
}

/// The study's experiments in two groups of about a minute each with `--quick` (most of it
/// waiting on node processes' blocks), so the smoke test runs them side by side.
const STUDY_GROUPS: [&str; 2] = [
    "tx-throughput,block-validation,speedup,hash,components,utxo-memory,voting,propagation,pipeline,load",
    "backend,signatures,contention,sync,scale,sim-check,profile,cpu",
];

/// The file `name` in whichever of `dirs` holds it (the first when none does).
fn in_either(dirs: &[&Path], name: impl AsRef<Path>) -> std::path::PathBuf {
    let name = name.as_ref();
    dirs.iter().map(|d| d.join(name)).find(|p| p.exists()).unwrap_or_else(|| dirs[0].join(name))
}

/// Every experiment of `scalechain study --quick` runs end to end in seconds (`propagation` on
/// networks of 2 and 3 node processes, `load` and `sync` on a devnet of 4, `scale` on simulated
/// networks of 16 to 64 nodes) and writes, for each, a CSV with the documented columns, an SVG
/// and a report section; the experiments are named as a comma-separated list (two lists,
/// [`STUDY_GROUPS`], run at once; together they are `all`). Bad arguments are refused.
#[test]
fn study_quick_smoke() {
    let dir = tempfile::tempdir().unwrap();
    let (out_a, out_b) = (dir.path().join("study-a"), dir.path().join("study-b"));
    let all: Vec<&str> = STUDY_GROUPS.iter().flat_map(|g| g.split(',')).collect();
    assert_eq!(all.len(), 18, "every experiment once: {all:?}");
    let runs: Vec<_> = STUDY_GROUPS
        .iter()
        .zip([&out_a, &out_b])
        .map(|(group, out)| {
            bin()
                .args(["study", group, "--quick", "--max-log2", "6", "--runs", "1", "--out"])
                .arg(out)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        let o = r.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let dirs = [out_a.as_path(), out_b.as_path()];
    let out = &dirs;
    let report: String = dirs
        .iter()
        .map(|d| std::fs::read_to_string(d.join("report.md")).unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    for (exp, header) in [
        ("tx-throughput", "n,mode,threads,build,median_s,tx_per_s,runs,commit,seed"),
        (
            "block-validation",
            "n,mode,threads,build,fork_s,merkle_s,tx_verify_s,total_s,bound_s,apply_s,commit_s,index_s",
        ),
        ("speedup", "task,n,threads,build,median_s,speedup,amdahl,parallel_fraction"),
        ("hash", "algorithm,bytes,threads,build,impl,hashes_per_s,mb_per_s,peak_rss_kib"),
        ("components", "component,ns,iterations,build"),
        ("utxo-memory", "structure,outputs,build,rss_bytes_per_output,heap_bytes_per_output"),
        ("voting", "scheme,mode,threads,candidates,ballots,ballots_per_s,ballots_per_s_per_core"),
        ("propagation", "series,placement,nodes,node,x_ms,count,p50_ms,p90_ms,p99_ms,max_ms,runs"),
        ("pipeline", "source,n,runs,median_s,tx_per_s,node_cpu_us,sender_cpu_us,busy,build,commit,seed"),
        ("load", "workload,controller,offered_tps,trial,send_tps,throughput_tps,lat_avg_ms"),
        ("sync", "series,t_s,height,txs,tx_per_s,build,commit"),
        ("scale", "series,nodes,interval_s,compact,blocks,stale_pct,block_p50_ms,block_p90_ms"),
        ("sim-check", "series,placement,nodes,model,sim_p50_ms,real_p50_ms,sim_p90_ms,real_p90_ms"),
        ("profile", "path,calls,avg_us,excl_us,max_us,total_ms,build,commit"),
        ("cpu", "series,workload,name,path,count,share_pct,seed_pct,avg_us,max_us,beyond_pct"),
    ] {
        let csv = std::fs::read_to_string(in_either(out, format!("{exp}.csv"))).unwrap();
        assert!(csv.starts_with(header), "{exp}: {}", csv.lines().next().unwrap_or(""));
        assert!(csv.lines().count() > 1, "{exp} has no rows");
        let svg = std::fs::read_to_string(in_either(out, format!("{exp}.svg"))).unwrap();
        // Lines, or points on a categorical axis.
        assert!(
            svg.starts_with("<svg") && (svg.contains("<polyline") || svg.contains("<circle")),
            "{exp}.svg"
        );
        // Each section opens with its figure, then what it shows.
        let opening = format!("## `{exp}` (quick)\n\n![{exp}]({exp}.svg)\n\n");
        assert!(report.contains(&opening), "{exp} section missing or not opening with its figure");
        assert_eq!(report.matches(&format!("## `{exp}` (quick)\n")).count(), 1, "{exp} once");
    }
    // Seed 003's optimisations: each case's rounds (one trial each with --quick), and backend's
    // per-operation rows of this build.
    for (exp, cases) in [("backend", 1), ("signatures", 2), ("contention", 2)] {
        let csv = std::fs::read_to_string(in_either(out, format!("{exp}.csv"))).unwrap();
        assert!(csv.starts_with("case,round,offered_tps,trial,ns_per_op,send_tps,throughput_tps"), "{exp}");
        let rounds = csv.lines().filter(|l| l.contains(",saturated,") || l.contains(",below,")).count();
        assert_eq!(rounds, 2 * cases, "{exp}: {csv}");
        // backend's ladder: one middle rung between them, and the saturation table.
        let middle = csv.lines().filter(|l| l.contains(",offered 300,")).count();
        assert_eq!(middle, if exp == "backend" { cases } else { 0 }, "{exp}: {csv}");
        let svg = std::fs::read_to_string(in_either(out, format!("{exp}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{exp}.svg");
        // Each section opens with its figure, then what it shows.
        let opening = format!("## `{exp}` (quick)\n\n![{exp}]({exp}.svg)\n\n");
        assert!(report.contains(&opening), "{exp} section missing or not opening with its figure");
        assert_eq!(report.matches(&format!("## `{exp}` (quick)\n")).count(), 1, "{exp} once");
    }
    // contention: the blocks of the rounds on every node with their commit times (the wait for
    // the chain's write lock and the hold), with the execution under the lock and lock-free.
    let csv = std::fs::read_to_string(in_either(out, "contention.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",node,height,lock_wait_ms,commit_ms"), "{csv}");
    for case in ["execution 200 ms under the lock", "execution 200 ms lock-free"] {
        let blocks: Vec<Vec<&str>> = csv
            .lines()
            .filter(|l| {
                l.starts_with(&format!("{case},saturated block,"))
                    || l.starts_with(&format!("{case},below block,"))
            })
            .map(|l| l.split(',').collect())
            .collect();
        assert!(!blocks.is_empty(), "{case}: no block's commit time in {csv}");
        for f in &blocks {
            let (wait, commit) = (f[18].parse::<f64>().unwrap(), f[19].parse::<f64>().unwrap());
            assert!(f[17].parse::<u64>().unwrap() > 0 && commit > 0.0 && wait <= commit, "{f:?}");
        }
    }
    assert!(
        report.contains("**Block commit times**") && report.contains("| execution 200 ms lock-free | "),
        "{report}"
    );
    // sync: the five new nodes, with both indexes, without each, without either and with both
    // again, each reached the devnet's tip (the run checks its hash) and have their progress.
    let csv = std::fs::read_to_string(in_either(out, "sync.csv")).unwrap();
    let whole: Vec<Vec<&str>> =
        csv.lines().filter(|l| l.starts_with("sync")).map(|l| l.split(',').collect()).collect();
    let series: Vec<&str> = whole.iter().map(|r| r[0]).collect();
    assert_eq!(
        series,
        ["sync", "sync-no-txid-index", "sync-no-owner-index", "sync-lean", "sync-repeat"],
        "{csv}"
    );
    assert!(whole.iter().all(|r| (r[2], r[3]) == (whole[0][2], whole[0][3])), "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("progress-lean,")), "{csv}");
    // profile: the miner offered each of the 1,001 to its pool once, and the report sets the
    // span beside seed 001's function.
    let csv = std::fs::read_to_string(in_either(out, "profile.csv")).unwrap();
    let offers: u64 = csv
        .lines()
        .filter(|l| l.split(',').next().is_some_and(|p| p.ends_with("mempool.offer")))
        .map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(offers, 1_001, "{csv}");
    assert!(report.contains("| AcceptToMemoryPoolWithTime | 11, 405 | 11, 447 |"), "{report}");
    // block-validation: the commit's row times the txid index's write after it, in the CSV and
    // in the target table.
    let csv = std::fs::read_to_string(in_either(out, "block-validation.csv")).unwrap();
    let committed: Vec<&str> =
        csv.lines().skip(1).filter(|l| !l.split(',').nth(10).unwrap_or("").is_empty()).collect();
    assert_eq!(committed.len(), 1, "{csv}");
    let index_s: f64 = committed[0].split(',').nth(11).unwrap().parse().unwrap();
    assert!(index_s >= 0.0, "{csv}");
    assert!(report.contains("| store commit s | txid index written after, s |"), "{report}");
    // cpu: perf sampled the peer over each round; the categories of a round sum to 100% and
    // more than one holds samples; the miner's long profile has histograms of more than one
    // non-empty bucket.
    let csv = std::fs::read_to_string(in_either(out, "cpu.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    for w in ["transfer", "ballot-elgamal"] {
        let shares: Vec<f64> = rows
            .iter()
            .filter(|r| r[0] == "category" && r[1] == w)
            .map(|r| r[5].parse::<f64>().unwrap())
            .collect();
        assert_eq!(shares.len(), 11, "{w}: {csv}");
        let sum: f64 = shares.iter().sum();
        assert!((sum - 100.0).abs() < 0.1, "{w}: {sum}");
        assert!(shares.iter().filter(|&&x| x > 0.0).count() > 1, "{w}: {shares:?}");
    }
    let spans: Vec<&str> = rows.iter().filter(|r| r[0] == "span").map(|r| r[2]).collect();
    assert!(spans.contains(&"mempool.offer"), "{csv}");
    let used = |span: &str| rows.iter().filter(|r| r[0] == "log2" && r[2] == span && r[4] != "0").count();
    assert!(spans.iter().any(|s| used(s) > 1), "{csv}");
    assert!(report.contains("| signatures | signature verification | 20 |"), "{report}");
    let backend = std::fs::read_to_string(in_either(out, "backend.csv")).unwrap();
    assert_eq!(backend.lines().filter(|l| l.contains(",op ")).count(), 4, "{backend}");
    assert!(report.contains("| case | saturates at (offered tx/s) | peak throughput (tx/s) |"), "{report}");
    // tx-throughput: every mode at every n, and positive rates.
    let csv = std::fs::read_to_string(in_either(out, "tx-throughput.csv")).unwrap();
    for mode in ["sequential", "batch", "parallel", "bound", "bound_single"] {
        assert_eq!(csv.lines().filter(|l| l.split(',').nth(1) == Some(mode)).count(), 7, "{mode}");
    }
    assert!(csv.lines().skip(1).all(|l| l
        .split(',')
        .nth(5)
        .and_then(|r| r.parse::<f64>().ok())
        .is_some_and(|r| r > 0.0)));
    // scale: 16 and 64 simulated nodes with block and transaction propagation times, and the
    // stale rate at two intervals with compact blocks on and off.
    let csv = std::fs::read_to_string(in_either(out, "scale.csv")).unwrap();
    for n in ["16", "64"] {
        let row = csv.lines().find(|l| l.starts_with(&format!("propagation,{n},"))).unwrap();
        let f: Vec<&str> = row.split(',').collect();
        for i in [6, 7, 10, 11] {
            assert!(f[i].parse::<f64>().is_ok_and(|ms| ms > 0.0), "{n} nodes: column {i} of {row}");
        }
    }
    assert_eq!(csv.lines().filter(|l| l.starts_with("stale,32,")).count(), 4, "{csv}");
    // The load swept at 16 nodes: confirmed throughput and whether every node kept up.
    let load: Vec<Vec<&str>> =
        csv.lines().filter(|l| l.starts_with("load,16,")).map(|l| l.split(',').collect()).collect();
    assert_eq!(load.len(), 2, "{csv}");
    assert!(load.iter().all(|f| f[15].parse::<f64>().is_ok_and(|c| c > 0.0) && !f[17].is_empty()), "{csv}");
    assert!(
        report.contains("| nodes | highest load every node kept up with, tx/s |"),
        "keeping up against N"
    );
    // Seed 001 at scale: every watched node got all 1,001, with histograms of 50 buckets each.
    let nodes: Vec<&str> = csv.lines().filter(|l| l.starts_with("seed001-node,")).collect();
    assert!(nodes.len() >= 2, "{csv}");
    assert!(nodes.iter().all(|l| l.split(',').nth(20) == Some("1001")), "{csv}");
    let buckets = csv.lines().filter(|l| l.starts_with("seed001-histogram,")).count();
    assert_eq!(buckets, 50 * nodes.len(), "{csv}");
    assert!(in_either(out, "scale-costs.toml").exists());
    // sim-check: 4 nodes on loopback and across seed 001's sites, measured and simulated with
    // both CPU models, transactions and blocks; every time present and positive.
    let csv = std::fs::read_to_string(in_either(out, "sim-check.csv")).unwrap();
    for place in ["loopback", "wan-seed001"] {
        for model in ["own-cores", "shared-host"] {
            let row = csv.lines().find(|l| l.starts_with(&format!("tx,{place},4,{model},"))).unwrap();
            let f: Vec<&str> = row.split(',').collect();
            for (i, v) in f.iter().enumerate().take(10).skip(4) {
                assert!(v.parse::<f64>().is_ok_and(|ms| ms > 0.0), "column {i} of {row}");
            }
            assert!(csv.lines().any(|l| l.starts_with(&format!("block,{place},4,{model},"))), "{csv}");
        }
    }
    assert!(in_either(out, "sim-check-costs.toml").exists());
    // Under Shadow at 16 nodes when Shadow is found; otherwise the report says it was not.
    let shadow_rows = csv.lines().filter(|l| l.contains(",shadow-simblock,16,")).count();
    if scalechain_lab::launcher::shadow::find().is_some() {
        assert_eq!(shadow_rows, 6, "two series for each of the three uplink models: {csv}");
    } else {
        assert_eq!(shadow_rows, 0, "{csv}");
        assert!(report.contains("**Under Shadow: not run.**"), "the report says Shadow was absent");
    }
    // voting: both schemes in every mode, with positive rates.
    let csv = std::fs::read_to_string(in_either(out, "voting.csv")).unwrap();
    for scheme in ["elgamal", "paillier"] {
        for mode in ["single", "batch", "batch-parallel", "end-to-end"] {
            let row = csv.lines().find(|l| l.starts_with(&format!("{scheme},{mode},"))).unwrap();
            assert!(
                row.split(',').nth(5).and_then(|r| r.parse::<f64>().ok()).is_some_and(|r| r > 0.0),
                "{row}"
            );
        }
    }
    // propagation: node processes took the 1,001 transactions, and every node logged all of them.
    let csv = std::fs::read_to_string(in_either(out, "propagation.csv")).unwrap();
    for series in ["tx-propagation", "local-accept", "block-propagation"] {
        assert_eq!(
            csv.lines().filter(|l| l.starts_with(&format!("{series},loopback,"))).count(),
            2,
            "{series}"
        );
        // Across the regions, once in one request (ours) and once one request each (seed 001's).
        let wan = format!("{series},wan-seed001,3,");
        for mode in ["batch-ours", "one-by-one-seed001"] {
            let rows =
                csv.lines().filter(|l| l.starts_with(&wan) && l.split(',').nth(11) == Some(mode)).count();
            assert_eq!(rows, 1, "{series} {mode}");
        }
    }
    // One by one, seed 001's histograms have a shape: every node the transactions were relayed
    // to took them in more than one of the 50 buckets (in one request, each took them at one
    // instant or a few), and in more than one packet.
    let one_by_one = |l: &&str| l.split(',').nth(11) == Some("one-by-one-seed001");
    for node in ["1", "2"] {
        let hist = format!("histogram,wan-seed001,3,{node},");
        let buckets: Vec<u64> = csv
            .lines()
            .filter(|l| l.starts_with(&hist))
            .filter(one_by_one)
            .map(|l| l.split(',').nth(5).unwrap().parse().unwrap())
            .collect();
        assert_eq!(buckets.len(), 50, "node {node}: {csv}");
        assert_eq!(buckets.iter().sum::<u64>(), 1001, "node {node}: {buckets:?}");
        assert!(buckets.iter().filter(|&&c| c > 0).count() > 1, "node {node}: one bar: {buckets:?}");
        let arrival = format!("tx-arrival,wan-seed001,3,{node},");
        let row = csv.lines().filter(|l| l.starts_with(&arrival)).find(one_by_one).unwrap();
        let packets: f64 = row.split(',').nth(12).unwrap().parse().unwrap();
        assert!(packets > 1.0, "{row}");
    }
    // Across the regions, a transaction takes at least the 60 + 100 ms of the fastest path from
    // Canada to India to reach every node.
    let wan = csv.lines().find(|l| l.starts_with("tx-propagation,wan-seed001,")).unwrap();
    let p50: f64 = wan.split(',').nth(6).unwrap().parse().unwrap();
    assert!(p50 >= 150.0, "{wan}");
    // As root, the main network also ran on emulated hosts (network namespaces).
    if scalechain_lab::launcher::netns::is_root() {
        let hosts = csv.lines().filter(|l| l.starts_with("tx-arrival,namespaces,3,")).count();
        assert_eq!(hosts, 3, "{csv}");
        let wan = csv.lines().find(|l| l.starts_with("tx-propagation,namespaces-wan-seed001,3,")).unwrap();
        let p50: f64 = wan.split(',').nth(6).unwrap().parse().unwrap();
        assert!(p50 >= 150.0, "{wan}");
    }
    let arrivals: Vec<&str> = csv.lines().filter(|l| l.starts_with("tx-arrival,loopback,3,")).collect();
    assert_eq!(arrivals.len(), 3, "{csv}");
    assert!(arrivals.iter().all(|l| l.split(',').nth(5) == Some("1001")), "{arrivals:?}");
    // pipeline: every source at every group size, positive rates.
    let csv = std::fs::read_to_string(in_either(out, "pipeline.csv")).unwrap();
    let mut sources = vec![("memory", 7), ("verify-bound", 7), ("same-machine", 5)];
    if scalechain_lab::launcher::netns::is_root() {
        sources.push(("namespace-same-cores", 5));
    }
    for (source, sizes) in sources {
        let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with(&format!("{source},"))).collect();
        assert_eq!(rows.len(), sizes, "{source}: {csv}");
        assert!(rows.iter().all(|l| l
            .split(',')
            .nth(4)
            .and_then(|r| r.parse::<f64>().ok())
            .is_some_and(|r| r > 0.0)));
        // The node sources' CPU: the node's per transaction positive; the cores' share positive
        // and not absurd (on sends of a millisecond the kernel's accounting of running
        // threads lags a little).
        if source != "memory" && source != "verify-bound" {
            for l in &rows {
                let cell = |i: usize| l.split(',').nth(i).and_then(|r| r.parse::<f64>().ok());
                assert!(cell(5).is_some_and(|us| us > 0.0), "{l}");
                assert!(cell(7).is_some_and(|b| b > 0.0 && b < 2.0), "{l}");
            }
        }
    }
    assert!(report.contains("What the node sources spent"), "{report}");
    // load: every workload's fixed-rate and fixed-load rounds, everything sent confirmed.
    let csv = std::fs::read_to_string(in_either(out, "load.csv")).unwrap();
    for w in ["transfer", "ballot-elgamal", "ballot-paillier"] {
        let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with(&format!("{w},"))).collect();
        assert!(rows.iter().any(|l| l.contains(",fixed-load,")), "{w}: {csv}");
        assert!(rows.iter().all(|l| l.split(',').nth(11) == Some("0")), "{w}: nothing failed: {csv}");
    }
    assert!(report.contains("Seed 003 §7.2 recomputed"), "{report}");
    // The seed's figures stand beside ours.
    assert!(report.contains("Beside seed 000 Table 5.1") && report.contains("Seed 004"));
    assert!(report.contains("Seed 003 measured 310 ballots/s") && report.contains("cores per validator"));
    let o = bin().args(["study", "nonsense", "--out"]).arg(&out_a).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown experiment"));
    // One bad name in a list refuses the list before anything runs.
    let fresh = dir.path().join("fresh");
    let o = bin().args(["study", "speedup,nonsense", "--quick", "--out"]).arg(&fresh).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown experiment \"nonsense\""));
    assert!(!fresh.join("speedup.csv").exists(), "nothing ran");
    // A failed experiment does not stop the list: `backend` refuses a second binary of its own
    // build at once, `speedup` after it still runs, and the status is 1 naming the failure.
    let me = env!("CARGO_BIN_EXE_scalechain");
    let o = bin()
        .args(["study", "backend,speedup", "--quick", "--runs", "1", "--compare", me, "--out"])
        .arg(&fresh)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 of 2 experiments failed: backend: two binaries of the same build"), "{err}");
    assert!(fresh.join("speedup.csv").exists(), "the experiment after the failed one ran");
}

/// `scalechain vote demo` runs a whole election: the tally equals the truth, the decryption
/// proofs verify, and every invalid ballot (two of each kind) is refused.
#[test]
fn vote_demo_elects_correctly_and_refuses_every_invalid_ballot() {
    let o = bin()
        .args([
            "vote",
            "demo",
            "--voters",
            "60",
            "--candidates",
            "3",
            "--invalid",
            "14",
            "--json",
            "--seed",
            "5",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["scheme"], "elgamal");
    assert_eq!(v["tally"], v["expected"]);
    assert_eq!(v["tally"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).sum::<u64>(), 60);
    assert_eq!(v["verified"], true);
    assert_eq!((v["invalid_cast"].as_u64(), v["rejected_invalid"].as_u64()), (Some(14), Some(14)));
    for rule in [
        "vote-double-vote",
        "vote-bad-sum-proof",
        "vote-bad-choice-proof",
        "vote-bad-token",
        "vote-outside-window",
        "vote-malformed",
    ] {
        assert!(v["rejected_by_rule"][rule].as_u64().unwrap_or(0) >= 2, "{rule}: {v}");
    }
    assert!(v["ballots_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["latency_ms"]["p99"].as_f64().unwrap() >= v["latency_ms"]["p50"].as_f64().unwrap());
    let o = bin().args(["vote", "demo", "--candidates", "0"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Runs `scalechain node` with its standard error in a file until it logs that it listens, then
/// stops it; the log.
fn node_log(dir: &Path, extra: &[&str]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let log = dir.join("stderr.log");
    let mut child = bin()
        .args(["node", "--role", "peer", "--api", "off", "--data-dir"])
        .arg(dir.join("data"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("listening on") {
        assert!(
            std::time::Instant::now() < deadline,
            "no log line: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = child.wait();
    std::fs::read_to_string(&log).unwrap()
}

#[test]
fn node_logs_carry_no_colour_codes_off_a_terminal_and_json_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let text = node_log(&tmp.path().join("text"), &[]);
    assert!(text.contains("listening on") && !text.contains('\u{1b}'), "{text:?}");
    let json = node_log(&tmp.path().join("json"), &["--log-format", "json"]);
    let lines: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().all(|l| l["level"].is_string() && l["timestamp"].is_string()), "{json}");
    assert!(lines
        .iter()
        .any(|l| l["fields"]["message"].as_str().is_some_and(|m| m.contains("listening on"))));
}

#[test]
fn print_config_prints_the_settings_in_effect() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("node.toml");
    std::fs::write(&file, "[api]\nlisten = \"127.0.0.1:9999\"\n[mempool]\nmax_txs = 1234\n").unwrap();
    let out = ok(&["node", "--print-config", "--config", file.to_str().unwrap(), "--miner-threads", "3"]);
    let cfg: toml::Table = toml::from_str(&out).unwrap();
    assert_eq!(cfg["api"]["listen"].as_str(), Some("127.0.0.1:9999"), "{out}");
    assert_eq!(cfg["mempool"]["max_txs"].as_integer(), Some(1234), "{out}");
    assert_eq!(cfg["miner"]["threads"].as_integer(), Some(3), "the flag wins: {out}");
    // Without a file or flags: the defaults.
    let out = ok(&["node", "--print-config"]);
    assert!(out.contains("listen = \"127.0.0.1:8645\""), "{out}");
}

/// Every file under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out.sort();
    out
}

#[test]
fn every_command_uses_one_data_directory_layout_and_reads_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    // simulate writes the node's layout: the store in DATA_DIR/chain.
    simulate(&d, 3, 5, &[]);
    assert!(d.join("chain").is_dir(), "{:?}", tree(&d));
    let i = info(&d);
    assert_eq!(i["tip_height"], 3);
    let tip = i["tip_hash"].as_str().unwrap().to_string();
    // A node on that directory serves that chain (no second genesis, no second store).
    {
        use scalechain_lab::launcher::{Launcher, NodeSpec, Role};
        let mut net = Launcher::with_base(env!("CARGO_BIN_EXE_scalechain"), tmp.path()).unwrap();
        let node = net.start(NodeSpec::new("d", Role::Peer)).unwrap();
        let status = node.blocking_client().unwrap().status().unwrap();
        assert_eq!((status.height, status.tip.to_string()), (3, tip));
    }
    // A read-only command on a directory without a chain says so and creates nothing.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(&["chain", "info", "--data-dir", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no chain"));
    assert!(tree(&empty).is_empty(), "left behind: {:?}", tree(&empty));
    // A directory of the old layout (the store directly in it) is read where it is, and moved
    // into DATA_DIR/chain by the first command that writes.
    let old = tmp.path().join("old");
    std::fs::rename(d.join("chain"), &old).unwrap();
    let before = tree(&old);
    assert_eq!(info(&old)["tip_height"], 3);
    let after: Vec<String> = tree(&old).into_iter().filter(|f| !f.ends_with(".jnl")).collect();
    assert_eq!(
        after,
        before.into_iter().filter(|f| !f.ends_with(".jnl")).collect::<Vec<_>>(),
        "chain info moved nothing"
    );
    let file = tmp.path().join("old.json");
    export(&old, &file);
    ok(&["chain", "import", "--data-dir", old.to_str().unwrap(), file.to_str().unwrap()]);
    assert!(old.join("chain/version").is_file() && !old.join("version").exists(), "{:?}", tree(&old));
    assert_eq!(info(&old)["tip_height"], 3);
    ok(&["chain", "verify", "--data-dir", old.to_str().unwrap()]);
}
