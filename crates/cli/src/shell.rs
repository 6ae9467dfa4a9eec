//! `scalechain shell`: seed 000's interactive shell on a node's API.
//!
//! Commands (`help` lists them, `help <command>` tells one): `status`, `peers`, `tip`,
//! `block <height|hash> [--page P]` (its transactions 20 to a page), `tx <txid>`, `mempool`,
//! `balance`, `send --to ADDR --amount N [--fee-rate R]` (the wallet of `--wallet`, through the
//! same code as `scalechain wallet`), `load start <tps> [seconds]`, `load stop`, `load status`,
//! `save <file.json>`, `dot <file.dot>`, `help`, `quit` (or `exit`).
//!
//! On a terminal the shell uses a line editor with history (`--history FILE`, default
//! `~/.scalechain_history`) and tab completion of command names. When standard input is not a
//! terminal it reads one command per line (blank lines and lines starting with `#` are skipped),
//! so it can be scripted; it then exits with code 1 if any command failed. A failed command
//! prints `error: ...` on standard error and the shell goes on.
//!
//! `load` offers generated transfers at a fixed rate from a background thread, in rounds of up
//! to 10 s (`scalechain_lab::load::rounds`: each a one-round benchmark of the runner
//! `scalechain bench` and devnet use): the devnet premine keys' coins are split, the split is
//! waited for, the pre-signed transfers are submitted every 100 ms, and the round's transfers
//! are waited for before the next round spends the keys' coins again; `load status` shows the
//! offer's counters as they go (confirmations are counted when a round ends), and after the load
//! ended or was stopped, its final figures.
//!
//! `save` fetches the main chain block by block (checking that each block's parent is the one
//! before it, and starting again if the chain moved) into the JSON document
//! `scalechain chain export --format json` writes, checks that it reads back, and writes it;
//! `scalechain chain import` loads it. `dot` writes the same blocks as a Graphviz picture.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::{Args, CommandFactory, Parser, Subcommand};
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use scalechain_chain::export::{dot, parse_chain_json, BlockJson, ChainJson, ImportError, ParamsJson};
use scalechain_client::types::BlockId;
use scalechain_client::{ClientBuilder, ClientError};
use scalechain_consensus::genesis_block;
use scalechain_lab::load::rounds::{self, RoundStats};
use scalechain_types::{Hash, Lock};
use scalechain_wallet::{encode_address, AddressHrp};

use crate::remote::{self, Api, ChainInfo, NodeError, NodeOpts};
use crate::wallet::{self, plural, BalanceArgs, SendArgs, WalletError, WalletOpts};
use crate::Fail;

/// Arguments of `scalechain shell`.
#[derive(Args)]
pub struct ShellArgs {
    #[command(flatten)]
    wallet: WalletOpts,
    #[command(flatten)]
    api: NodeOpts,
    /// History file of interactive sessions (default: ~/.scalechain_history).
    #[arg(long)]
    history: Option<PathBuf>,
}

/// One shell command.
#[derive(Parser, Debug)]
#[command(
    name = "shell",
    no_binary_name = true,
    disable_help_subcommand = true,
    disable_version_flag = true,
    help_template = "commands:\n{subcommands}"
)]
enum Line {
    /// The node's status.
    Status,
    /// The node's peers.
    Peers,
    /// The main chain's tip.
    Tip,
    /// A block and its transactions, 20 to a page: `block <height|hash> [--page P]`.
    Block {
        /// Height or block hash.
        id: String,
        /// Which page of its transactions (from 1).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        page: u64,
    },
    /// A transaction from the mempool or the main chain: `tx <txid>`.
    Tx {
        /// The txid.
        txid: String,
    },
    /// The mempool.
    Mempool,
    /// The balance of the wallet (--wallet of the shell).
    Balance(BalanceArgs),
    /// Send from the wallet: `send --to ADDR --amount N [--fee-rate R]`.
    Send(SendArgs),
    /// Generated load: `load start <tps> [seconds]`, `load stop`, `load status`.
    Load {
        #[command(subcommand)]
        cmd: LoadCmd,
    },
    /// Save the main chain as JSON: `save <file.json>` (`scalechain chain import` reads it).
    Save {
        /// Output file.
        file: PathBuf,
    },
    /// Write the main chain as a DOT graph: `dot <file.dot>`.
    Dot {
        /// Output file.
        file: PathBuf,
    },
    /// List the commands, or tell one: `help [command]`.
    Help {
        /// The command to tell.
        command: Option<String>,
    },
    /// Leave the shell (also `exit`).
    #[command(visible_alias = "exit")]
    Quit,
}

#[derive(Subcommand, Debug)]
enum LoadCmd {
    /// Offer `tps` transfers per second, for `seconds` (default: until `load stop`).
    Start {
        /// Transfers per second.
        tps: u64,
        /// How long.
        seconds: Option<u64>,
    },
    /// Stop the load and print what it did.
    Stop,
    /// What the load has done so far.
    Status,
}

/// Why a shell command failed.
#[derive(Debug, thiserror::Error)]
enum ShellError {
    #[error(transparent)]
    Wallet(#[from] WalletError),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Node(#[from] NodeError),
    #[error("{0}")]
    Usage(String),
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the node's blocks do not form a valid chain export: {0}")]
    Export(ImportError),
    #[error("the chain changed {0} times while it was being downloaded; try again")]
    Moving(u32),
    #[error("{0}")]
    Load(String),
}

enum Flow {
    Continue,
    Quit,
}

/// The load thread's counters, and how long it ran once it has finished.
#[derive(Default)]
struct LoadStats {
    rounds: RoundStats,
    /// Set once, by the load thread as it ends.
    took: OnceLock<Duration>,
}

impl LoadStats {
    fn set_note(&self, s: String) {
        self.rounds.set_note(s);
    }

    fn text(&self, tps: u64, started: Instant) -> String {
        let note = self.rounds.note();
        let (offered, accepted, refused) = self.rounds.live();
        // The clock stops with the load.
        let took = self.took.get();
        format!(
            "load at {tps} tx/s for {:.1} s{}: {} offered, {} accepted, {} refused, {} confirmed, {} rounds{}{}\n",
            took.copied().unwrap_or_else(|| started.elapsed()).as_secs_f64(),
            if took.is_some() { " (finished)" } else { "" },
            offered,
            accepted,
            refused,
            self.rounds.confirmed.load(Ordering::Relaxed),
            self.rounds.rounds.load(Ordering::Relaxed),
            if note.is_empty() { "" } else { "; " },
            note
        )
    }
}

struct Load {
    stop: Arc<AtomicBool>,
    stats: Arc<LoadStats>,
    handle: Option<JoinHandle<()>>,
    tps: u64,
    started: Instant,
}

impl Load {
    fn finish(mut self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            if h.join().is_err() {
                self.stats.set_note("the load thread panicked".into());
            }
        }
        self.stats.text(self.tps, self.started)
    }
}

struct Shell {
    wallet: WalletOpts,
    /// The client settings, for the load thread's own client.
    builder: ClientBuilder,
    api: Api,
    load: Option<Load>,
    /// The figures of the last load stopped, for `load status` after it.
    last_load: Option<String>,
}

/// Runs `scalechain shell`.
pub fn run(a: ShellArgs) -> Result<(), Fail> {
    let api = a.api.client()?;
    let mut sh =
        Shell { wallet: a.wallet.clone(), builder: a.api.builder(), api, load: None, last_load: None };
    let result = if std::io::stdin().is_terminal() {
        let history = a.history.clone().or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".scalechain_history"))
        });
        sh.interactive(history.as_deref())
    } else {
        sh.script()
    };
    if let Some(l) = sh.load.take() {
        eprint!("{}", l.finish());
    }
    result
}

impl Shell {
    fn interactive(&mut self, history: Option<&Path>) -> Result<(), Fail> {
        let mut rl: Editor<Complete, DefaultHistory> =
            Editor::new().map_err(|e| Fail(2, format!("starting the line editor: {e}")))?;
        rl.set_helper(Some(Complete::new()));
        if let Some(h) = history {
            // A missing history file is the normal first run.
            let _ = rl.load_history(h);
        }
        println!("scalechain shell on {} (help lists the commands)", self.api.base());
        loop {
            match rl.readline("scalechain> ") {
                Ok(line) => {
                    if !line.trim().is_empty() {
                        let _ = rl.add_history_entry(line.as_str());
                    }
                    if let (Flow::Quit, _) = self.line(&line) {
                        break;
                    }
                }
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(Fail(2, format!("reading the command line: {e}"))),
            }
        }
        if let Some(h) = history {
            if let Err(e) = rl.save_history(h) {
                eprintln!("warning: cannot save the history to {}: {e}", h.display());
            }
        }
        Ok(())
    }

    fn script(&mut self) -> Result<(), Fail> {
        let mut failed = 0u64;
        for line in std::io::stdin().lock().lines() {
            let line = line.map_err(|e| Fail(2, format!("reading standard input: {e}")))?;
            let (flow, ok) = self.line(&line);
            failed += u64::from(!ok);
            if let Flow::Quit = flow {
                break;
            }
        }
        if failed > 0 {
            return Err(Fail(1, format!("{failed} commands failed")));
        }
        Ok(())
    }

    /// Runs one line; prints its output and any error. Returns whether to go on, and whether
    /// the command succeeded.
    fn line(&mut self, text: &str) -> (Flow, bool) {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() || words[0].starts_with('#') {
            return (Flow::Continue, true);
        }
        let cmd = match Line::try_parse_from(&words) {
            Ok(c) => c,
            Err(e) => {
                use clap::error::ErrorKind;
                let text = e.to_string();
                if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                    print!("{text}");
                    return (Flow::Continue, true);
                }
                let msg: Vec<&str> = text
                    .lines()
                    .take_while(|l| !l.starts_with("For more information"))
                    .map(str::trim_end)
                    .filter(|l| !l.is_empty())
                    .collect();
                let msg = msg.join("\n").trim_start_matches("error: ").to_string();
                eprintln!("error: {msg}\n(`help` lists the commands)");
                return (Flow::Continue, false);
            }
        };
        let mut out = String::new();
        let r = self.exec(cmd, &mut out);
        print!("{out}");
        let _ = std::io::stdout().flush();
        match r {
            Ok(flow) => (flow, true),
            Err(e) => {
                eprintln!("error: {e}");
                (Flow::Continue, false)
            }
        }
    }

    fn exec(&mut self, cmd: Line, out: &mut String) -> Result<Flow, ShellError> {
        match cmd {
            Line::Status => {
                let s = self.api.status()?;
                out.push_str(&format!(
                    "chain {}\nrole {}  peer {}\nheight {}  tip {}\npeers {}  orphans {}\nmempool {} txs, {} bytes\nuptime {:.1} s\n",
                    s.chain_id, s.role, s.peer_id, s.height, s.tip, s.peers, s.orphans, s.mempool_txs,
                    s.mempool_bytes, s.uptime_s
                ));
                for l in &s.listen {
                    out.push_str(&format!("listen {l}\n"));
                }
            }
            Line::Peers => {
                let peers = self.api.peers()?;
                out.push_str(&format!("{}\n", plural(peers.len(), "peer")));
                for p in &peers {
                    out.push_str(&format!(
                        "  {}  {}  role {}  height {}  score {}  rtt {}  last block {}\n",
                        p.peer_id,
                        p.addr,
                        p.role.as_deref().unwrap_or("null"),
                        p.height,
                        p.score,
                        p.rtt_us
                            .map_or_else(|| "-".to_string(), |us| format!("{:.1} ms", us as f64 / 1000.0)),
                        p.last_block_ms.map_or_else(|| "-".to_string(), |ms| ms.to_string())
                    ));
                }
            }
            Line::Tip => {
                let t = self.api.tip()?;
                out.push_str(&format!("height {}  hash {}\n", t.height, t.hash));
            }
            Line::Block { id, page } => {
                let id: BlockId = id.parse().map_err(|e| ShellError::Usage(format!("block {e}")))?;
                let b = self.api.block(id)?;
                block_text(&b, page, out)?;
            }
            Line::Tx { txid } => {
                let id = txid.parse::<Hash>().map_err(|_| {
                    ShellError::Usage(format!("tx {txid:?}: a txid is 64 lowercase hex digits"))
                })?;
                let t = self.api.tx(&id)?;
                match t.height {
                    Some(h) => out.push_str(&format!("{} {} at height {h}\n", t.tx.txid, t.status)),
                    None => out.push_str(&format!("{} {}\n", t.tx.txid, t.status)),
                }
                out.push_str(&format!("  kind {}  {} bytes\n", t.tx.kind, t.tx.raw.len() / 2));
                for i in &t.tx.inputs {
                    out.push_str(&format!("  in   {}:{} ({})\n", i.txid, i.index, i.scheme));
                }
                let (hrp, kind) = (AddressHrp::devnet(), remote::chain_info(&self.api)?.params.hash);
                for o in &t.tx.outputs {
                    let lock = Lock { scheme: o.scheme, pubkey_hash: o.pubkey_hash };
                    out.push_str(&format!("  out  {:>16}  {}\n", o.value, encode_address(&hrp, kind, &lock)));
                }
            }
            Line::Mempool => {
                let m = self.api.mempool(Some(20))?;
                out.push_str(&format!(
                    "{} txs, {} bytes; since start {} admitted, {} evicted, refused {:?}\n",
                    m.count, m.bytes, m.admitted, m.evicted, m.rejected
                ));
                for t in &m.txids {
                    out.push_str(&format!("  {t}\n"));
                }
                if m.count > m.txids.len() {
                    out.push_str(&format!("  ... and {} more\n", m.count - m.txids.len()));
                }
            }
            Line::Balance(b) => {
                let w = wallet::open(&self.wallet)?;
                out.push_str(&wallet::balance_text(
                    &wallet::balance_of(&self.api, &self.wallet, &w)?,
                    b.json,
                ));
            }
            Line::Send(s) => {
                let w = wallet::open(&self.wallet)?;
                let built = wallet::send(&self.api, &self.wallet, &w, &s)?;
                let o = wallet::send_text(&s, &built);
                out.push_str(&o.out);
                out.push_str(&o.info);
            }
            Line::Load { cmd } => self.load(cmd, out)?,
            Line::Save { file } => {
                let (chain, blocks) = fetch_chain(&self.api)?;
                let n = blocks.len();
                let txs: usize = blocks.iter().map(|b| b.txs.len()).sum();
                let doc = ChainJson {
                    params: ParamsJson { chain_id: chain.chain_id, params: chain.params },
                    blocks,
                };
                let mut text = serde_json::to_string(&doc)
                    .map_err(|e| ShellError::Usage(format!("encoding the chain as JSON: {e}")))?;
                text.push('\n');
                parse_chain_json(&text).map_err(ShellError::Export)?;
                write_file(&file, &text)?;
                out.push_str(&format!(
                    "saved {n} blocks (heights 0 to {}, {txs} transactions) to {}\n",
                    n.saturating_sub(1),
                    file.display()
                ));
            }
            Line::Dot { file } => {
                let (chain, blocks) = fetch_chain(&self.api)?;
                let doc = ChainJson {
                    params: ParamsJson { chain_id: chain.chain_id, params: chain.params },
                    blocks,
                };
                let text = serde_json::to_string(&doc)
                    .map_err(|e| ShellError::Usage(format!("encoding the chain as JSON: {e}")))?;
                let (params, rest) = parse_chain_json(&text).map_err(ShellError::Export)?;
                let mut all = Vec::with_capacity(rest.len() + 1);
                all.push(genesis_block(&params));
                all.extend(rest);
                write_file(&file, &dot(params.hash, &all))?;
                out.push_str(&format!("wrote {} blocks as DOT to {}\n", all.len(), file.display()));
            }
            Line::Help { command: None } => {
                out.push_str(&Line::command().render_help().to_string());
                out.push_str("\n`help <command>` explains one command.\n");
            }
            Line::Help { command: Some(name) } => {
                let mut all = Line::command();
                let Some(c) = all.find_subcommand_mut(&name) else {
                    return Err(ShellError::Usage(format!(
                        "help {name:?}: no such command (`help` lists them)"
                    )));
                };
                out.push_str(&c.render_long_help().to_string());
            }
            Line::Quit => return Ok(Flow::Quit),
        }
        Ok(Flow::Continue)
    }

    fn load(&mut self, cmd: LoadCmd, out: &mut String) -> Result<(), ShellError> {
        match cmd {
            LoadCmd::Start { tps, seconds } => {
                if tps == 0 || tps > 1_000_000 {
                    return Err(ShellError::Usage(format!(
                        "load start {tps}: tps must be from 1 to 1,000,000"
                    )));
                }
                if seconds == Some(0) {
                    return Err(ShellError::Usage("load start: seconds must be at least 1".into()));
                }
                if let Some(l) = &self.load {
                    if l.stats.took.get().is_none() {
                        return Err(ShellError::Load(
                            "a load is already running (`load stop` ends it)".into(),
                        ));
                    }
                }
                if let Some(l) = self.load.take() {
                    out.push_str(&format!("previous {}", l.finish()));
                }
                let stop = Arc::new(AtomicBool::new(false));
                let stats = Arc::new(LoadStats::default());
                let (builder, st, sp) = (self.builder.clone(), stats.clone(), stop.clone());
                let started = Instant::now();
                let handle = std::thread::Builder::new()
                    .name("load".into())
                    .spawn(move || {
                        if let Err(e) = drive_load(&builder, tps, seconds, &sp, &st) {
                            st.set_note(format!("stopped: {e}"));
                        }
                        let _ = st.took.set(started.elapsed());
                    })
                    .map_err(|e| ShellError::Load(format!("starting the load thread: {e}")))?;
                self.load = Some(Load { stop, stats, handle: Some(handle), tps, started });
                out.push_str(&format!(
                    "load started: {tps} tx/s {}\n",
                    seconds.map_or("until `load stop`".to_string(), |s| format!("for {s} s"))
                ));
            }
            LoadCmd::Stop => {
                let l = self.load.take().ok_or_else(|| ShellError::Load("no load is running".into()))?;
                let text = l.finish();
                out.push_str(&text);
                self.last_load = Some(text);
            }
            LoadCmd::Status => match (&self.load, &self.last_load) {
                (Some(l), _) => out.push_str(&l.stats.text(l.tps, l.started)),
                (None, Some(last)) => {
                    out.push_str(&format!("no load is running; the last one stopped: {last}"))
                }
                (None, None) => return Err(ShellError::Load("no load has been started".into())),
            },
        }
        Ok(())
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), ShellError> {
    std::fs::write(path, text).map_err(|source| ShellError::Write { path: path.to_path_buf(), source })
}

/// Transactions `block` lists per page.
const BLOCK_PAGE: usize = 20;

fn block_text(b: &BlockJson, page: u64, out: &mut String) -> Result<(), ShellError> {
    let pages = b.txs.len().div_ceil(BLOCK_PAGE).max(1);
    let page = usize::try_from(page).unwrap_or(usize::MAX);
    if page > pages {
        return Err(ShellError::Usage(format!(
            "block {}: --page {page}, but its {} fill {}",
            b.header.height,
            plural(b.txs.len(), "transaction"),
            plural(pages, "page")
        )));
    }
    let h = &b.header;
    out.push_str(&format!(
        "block {} {}\n  prev {}\n  time {}  target {}  nonce {}\n  merkle root {}\n  {}\n",
        h.height,
        b.hash,
        h.prev_hash,
        h.time,
        h.target,
        h.nonce,
        h.merkle_root,
        plural(b.txs.len(), "transaction")
    ));
    let first = (page - 1) * BLOCK_PAGE;
    for t in b.txs.iter().skip(first).take(BLOCK_PAGE) {
        let value: u64 = t.outputs.iter().map(|o| o.value.get()).fold(0, u64::saturating_add);
        out.push_str(&format!(
            "  {}  {:<8}  {} in  {} out  value {value}\n",
            t.txid,
            t.kind,
            t.inputs.len(),
            t.outputs.len()
        ));
    }
    if pages > 1 {
        let shown = b.txs.len().min(first + BLOCK_PAGE);
        out.push_str(&format!(
            "  transactions {}-{shown} of {} (page {page} of {pages}",
            first + 1,
            b.txs.len()
        ));
        if page < pages {
            out.push_str(&format!("; `block {} --page {}` for the next", h.height, page + 1));
        }
        out.push_str(")\n");
    }
    Ok(())
}

/// The main chain, genesis first, fetched block by block; starts again if a block's parent is
/// not the block before it (the chain moved during the download).
fn fetch_chain(api: &Api) -> Result<(ChainInfo, Vec<BlockJson>), ShellError> {
    const ATTEMPTS: u32 = 3;
    let chain = remote::chain_info(api)?;
    'attempt: for _ in 0..ATTEMPTS {
        let tip = api.tip()?;
        let mut blocks: Vec<BlockJson> = Vec::with_capacity(tip.height.min(100_000) as usize + 1);
        for h in 0..=tip.height {
            let b = match api.block(BlockId::Height(h)) {
                Ok(b) => b,
                Err(e) if e.is_not_found() => continue 'attempt,
                Err(e) => return Err(e.into()),
            };
            if b.header.height != h {
                return Err(WalletError::BadResponse {
                    url: format!("{}/blocks/{h}", api.base()),
                    detail: format!("the block has height {}", b.header.height),
                }
                .into());
            }
            if blocks.last().is_some_and(|p| p.hash != b.header.prev_hash) {
                continue 'attempt;
            }
            blocks.push(b);
        }
        return Ok((chain, blocks));
    }
    Err(ShellError::Moving(ATTEMPTS))
}

/// The load thread: its own runtime and client (a client's connections belong to one
/// runtime), the node's chain recognised, then the rounds until the time is up, `stop` is set,
/// or something fails.
fn drive_load(
    builder: &ClientBuilder,
    tps: u64,
    seconds: Option<u64>,
    stop: &AtomicBool,
    stats: &LoadStats,
) -> Result<(), ShellError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ShellError::Load(format!("starting the load's runtime: {e}")))?;
    let node = builder.build()?;
    rt.block_on(async {
        let c = ChainInfo::of(&node.status().await?)?;
        let chain = rounds::Chain { params: c.params, sig: c.sig, chain_id: c.chain_id };
        rounds::run(&node, &chain, tps, seconds, &stats.rounds, stop)
            .await
            .map_err(|e| ShellError::Load(e.to_string()))
    })
}

/// Tab completion of command names (and of `load`'s subcommands).
struct Complete {
    names: Vec<String>,
    load: Vec<String>,
}

impl Complete {
    fn new() -> Complete {
        let cmd = Line::command();
        let mut names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_string()).collect();
        names.push("exit".into());
        let load = cmd
            .find_subcommand("load")
            .map(|l| l.get_subcommands().map(|c| c.get_name().to_string()).collect())
            .unwrap_or_default();
        Complete { names, load }
    }
}

impl Completer for Complete {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let head = line.get(..pos).unwrap_or(line);
        let start =
            head.char_indices().rev().find(|(_, c)| c.is_whitespace()).map_or(0, |(i, c)| i + c.len_utf8());
        let (before, word) = head.split_at(start);
        let before: Vec<&str> = before.split_whitespace().collect();
        let pool = match before.as_slice() {
            [] => &self.names,
            ["load"] => &self.load,
            _ => return Ok((pos, Vec::new())),
        };
        Ok((start, pool.iter().filter(|n| n.starts_with(word)).cloned().collect()))
    }
}

impl Hinter for Complete {
    type Hint = String;
}

impl Highlighter for Complete {}

impl Validator for Complete {}

impl Helper for Complete {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn complete(line: &str) -> (usize, Vec<String>) {
        let history = DefaultHistory::new();
        let ctx = Context::new(&history);
        Complete::new().complete(line, line.len(), &ctx).unwrap()
    }

    #[test]
    fn completes_command_names_and_load_subcommands() {
        assert_eq!(complete("st"), (0, vec!["status".to_string()]));
        assert_eq!(complete("q"), (0, vec!["quit".to_string()]));
        let (start, mut load) = complete("load st");
        load.sort();
        assert_eq!((start, load), (5, vec!["start".to_string(), "status".to_string(), "stop".to_string()]));
        assert_eq!(complete("block 1"), (7, vec![]));
        assert_eq!(complete("\u{3000}ti"), (3, vec!["tip".to_string()]), "a wide space is a separator");
    }

    #[test]
    fn lines_parse_like_the_help_says() {
        let parse = |s: &str| Line::try_parse_from(s.split_whitespace());
        assert!(matches!(
            parse("load start 10 3"),
            Ok(Line::Load { cmd: LoadCmd::Start { tps: 10, seconds: Some(3) } })
        ));
        assert!(matches!(parse("exit"), Ok(Line::Quit)));
        assert!(matches!(
            parse("send --to x --amount 5"),
            Ok(Line::Send(SendArgs { amount: 5, fee_rate: 1_000, .. }))
        ));
        assert!(parse("load start many").is_err());
        assert!(parse("block").is_err());
        assert!(parse("bogus").is_err());
    }
}
