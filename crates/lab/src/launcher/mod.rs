//! The local-network launcher: `scalechain node` processes (a bootstrap node, peers, miners)
//! with temporary or given data directories and OS-chosen ports, each waited for until it is
//! up (its `node.json`, written by the process the launcher started), with its API clients and
//! its log; and any extra processes an experiment needs, tracked the same way.
//!
//! - The executable is a parameter: the CLI passes `std::env::current_exe()`, tests
//!   `env!("CARGO_BIN_EXE_scalechain")`.
//! - Each node runs `EXE node --role R --data-dir DIR --api 127.0.0.1:0 --listen
//!   /ip4/127.0.0.1/tcp/0 [--bootstrap ADDR]... [--config DIR/node.toml] [ARGS]...`, standard
//!   output and error appended to `DIR/node.log` ([`Node::log_tail`] reads its end for error
//!   messages). A [`Placement`] may choose other listen addresses and wrap the command line
//!   (`ip netns exec NS ...`); the wrapper must exec the node (keep its pid), as `ip netns exec`
//!   does, since a node is up when its `node.json` names the pid the launcher started.
//! - Stopping — [`Launcher::stop`], dropping the launcher, or Ctrl-C / SIGTERM through
//!   [`crate::interrupt`], which every wait checks — sends SIGTERM to every process, waits at
//!   most the stop time-out for all of them, then SIGKILLs the rest: no process outlives the
//!   launcher. A temporary base directory is removed after that; a given one is kept. (A
//!   launcher killed with SIGKILL cannot stop anything: tying the children's lives to it would
//!   take an unsafe pre-exec hook, which the workspace forbids.)
//! - Single nodes can be stopped, killed and restarted on the same data directory.
//! - [`shadow`]: the same binary as hosts of the Shadow network simulator, in virtual time
//!   (configuration, run, and finding Shadow, which is optional).

pub mod netns;
mod process;
pub mod shadow;
pub mod wan;

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use process::{signal_pid, tail, Sig, Stopped};

use scalechain_client::types::NodeInfo;
use scalechain_client::{blocking, Client, ClientBuilder, ClientError};

use crate::interrupt;

/// How long a node gets to be up, by default.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long processes get to stop after SIGTERM before SIGKILL, by default.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of a log quoted in error messages.
const TAIL_LINES: usize = 20;

/// A node's role (`scalechain node --role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The well-known node others join through.
    Bootstrap,
    /// Validates, relays, serves the API.
    Peer,
    /// A peer that also mines.
    Miner,
}

impl Role {
    /// `bootstrap`, `peer` or `miner`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Bootstrap => "bootstrap",
            Role::Peer => "peer",
            Role::Miner => "miner",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to start: a node's name (its data directory's name under the base directory), role,
/// and options.
#[derive(Clone, Debug)]
pub struct NodeSpec {
    /// Name: letters, digits, `-` and `_`.
    pub name: String,
    /// Role.
    pub role: Role,
    /// Data directory (default: `BASE/<name>`).
    pub data_dir: Option<PathBuf>,
    /// Multiaddrs to join through.
    pub bootstrap: Vec<String>,
    /// A configuration file's text (TOML), written to `DATA_DIR/node.toml` and passed with
    /// `--config` (flags the launcher passes override it).
    pub config: Option<String>,
    /// Extra arguments after the launcher's own.
    pub args: Vec<OsString>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
}

impl NodeSpec {
    /// A node called `name` in `role`.
    pub fn new(name: impl Into<String>, role: Role) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            role,
            data_dir: None,
            bootstrap: Vec::new(),
            config: None,
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Joins through `addr`.
    pub fn bootstrap(mut self, addr: impl Into<String>) -> NodeSpec {
        self.bootstrap.push(addr.into());
        self
    }

    /// Uses `dir` as its data directory.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> NodeSpec {
        self.data_dir = Some(dir.into());
        self
    }

    /// Its configuration file's text (TOML).
    pub fn config(mut self, toml: impl Into<String>) -> NodeSpec {
        self.config = Some(toml.into());
        self
    }

    /// One more argument.
    pub fn arg(mut self, a: impl Into<OsString>) -> NodeSpec {
        self.args.push(a.into());
        self
    }

    /// More arguments.
    pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> NodeSpec {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> NodeSpec {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Mining threads (`--miner-threads`).
    pub fn miner_threads(self, n: usize) -> NodeSpec {
        self.arg("--miner-threads").arg(n.to_string())
    }
}

/// Where a node runs: its listen addresses and what its command line is wrapped in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// P2P listen multiaddr.
    pub listen: String,
    /// API listen address (`ip:port`), reachable from the launcher's process.
    pub api: String,
    /// Program and arguments put before the node's command line (empty: none), e.g.
    /// `["ip", "netns", "exec", "ns1"]`.
    pub wrap: Vec<OsString>,
}

impl Default for Place {
    /// Loopback, OS-chosen ports, no wrapper.
    fn default() -> Place {
        Place { listen: "/ip4/127.0.0.1/tcp/0".into(), api: "127.0.0.1:0".into(), wrap: Vec::new() }
    }
}

/// Chooses where each node runs (network namespaces, other addresses).
pub trait Placement: Send + Sync {
    /// The place of the node `name` in `role`.
    fn place(&self, name: &str, role: Role) -> Place;
}

impl<F: Fn(&str, Role) -> Place + Send + Sync> Placement for F {
    fn place(&self, name: &str, role: Role) -> Place {
        self(name, role)
    }
}

/// Why the launcher failed.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A file or directory could not be made or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A process could not be started.
    #[error("starting {name} ({program}): {source}")]
    Spawn {
        /// The process's name.
        name: String,
        /// The program.
        program: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A name is unusable (it becomes a directory name).
    #[error("{0:?} is not a process name (letters, digits, '-' and '_')")]
    BadName(String),
    /// A name is taken.
    #[error("a process called {0} exists already")]
    Duplicate(String),
    /// No such node or process.
    #[error("no node or process called {0}")]
    Unknown(String),
    /// A node exited before it was up.
    #[error("{name} exited ({status}) before it was up; its log {log} ends with:\n{tail}")]
    Exited {
        /// The node.
        name: String,
        /// How it ended.
        status: ExitStatus,
        /// Its log.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// A node was not up in time.
    #[error("{name} was not up within {after:?}; its log {log} ends with:\n{tail}")]
    NotUp {
        /// The node.
        name: String,
        /// The time-out.
        after: Duration,
        /// Its log.
        log: PathBuf,
        /// The end of its log.
        tail: String,
    },
    /// A node's `node.json` lacks what the launcher needs.
    #[error("{name}: node.json has no {what}")]
    Incomplete {
        /// The node.
        name: String,
        /// What is missing (`API address`, `p2p address`).
        what: &'static str,
    },
    /// A condition waited for did not hold in time.
    #[error("timed out after {after:?} waiting for {what}")]
    WaitTimeout {
        /// The condition.
        what: String,
        /// The time-out.
        after: Duration,
    },
    /// A node's API client could not be made.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// The interrupt handler could not be installed.
    #[error("{0}")]
    Signals(String),
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> LaunchError + 'a {
    move |source| LaunchError::Io { what, path: path.to_path_buf(), source }
}

/// A node that is up.
#[derive(Clone, Debug)]
pub struct Node {
    name: String,
    role: Role,
    data_dir: PathBuf,
    log: PathBuf,
    info: NodeInfo,
    api: String,
    client: Client,
    /// The API token file, if the node wrote one.
    token: Option<PathBuf>,
}

impl Node {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The end of its log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }

    /// Its `node.json`.
    pub fn info(&self) -> &NodeInfo {
        &self.info
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.info.pid
    }

    /// Its API address (`host:port`).
    pub fn api_addr(&self) -> &str {
        &self.api
    }

    /// Its API's base URL (`http://host:port`).
    pub fn api_url(&self) -> String {
        format!("http://{}", self.api)
    }

    /// Its first P2P address (with `/p2p/<peer id>`).
    pub fn p2p_addr(&self) -> &str {
        self.info.p2p.first().map_or("", String::as_str)
    }

    /// Its async API client (use it on one tokio runtime).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A new blocking API client (its own runtime; not for use inside async code).
    pub fn blocking_client(&self) -> Result<blocking::Client, ClientError> {
        match &self.token {
            Some(t) => ClientBuilder::new(&self.api).token_file(t).build_blocking(),
            None => blocking::Client::new(&self.api),
        }
    }
}

/// A node process the launcher knows of: running or stopped.
struct Slot {
    spec: NodeSpec,
    data_dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    up: Option<Node>,
}

/// An extra process.
struct Extra {
    name: String,
    log: PathBuf,
    child: Option<Child>,
}

enum Base {
    Temp(tempfile::TempDir),
    Given(PathBuf),
}

impl Base {
    fn path(&self) -> &Path {
        match self {
            Base::Temp(t) => t.path(),
            Base::Given(p) => p,
        }
    }
}

/// How many nodes of each role [`Launcher::start_network`] starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkPlan {
    /// Peers, named `peer0`, `peer1`, ...
    pub peers: usize,
    /// Miners, named `miner0`, ...
    pub miners: usize,
    /// Mining threads per miner.
    pub miner_threads: usize,
    /// A configuration file (TOML) every node of the network starts with, if any.
    pub config: Option<String>,
}

/// The launcher: its processes live as long as it does.
pub struct Launcher {
    exe: PathBuf,
    base: Option<Base>,
    placement: Option<Arc<dyn Placement>>,
    start_timeout: Duration,
    stop_timeout: Duration,
    nodes: Vec<Slot>,
    extras: Vec<Extra>,
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher")
            .field("exe", &self.exe)
            .field("base", &self.base_dir())
            .field("nodes", &self.nodes.iter().map(|s| s.spec.name.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

impl Launcher {
    /// A launcher of `exe` over a new temporary base directory (removed when it stops). Installs
    /// the Ctrl-C / SIGTERM flag ([`crate::interrupt`]).
    pub fn new(exe: impl Into<PathBuf>) -> Result<Launcher, LaunchError> {
        let tmp = tempfile::Builder::new()
            .prefix("scalechain-net-")
            .tempdir()
            .map_err(io("creating a temporary directory in", &std::env::temp_dir()))?;
        Launcher::with(exe.into(), Base::Temp(tmp))
    }

    /// A launcher of `exe` over the base directory `dir` (created if missing, kept).
    pub fn with_base(exe: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> Result<Launcher, LaunchError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
        Launcher::with(exe.into(), Base::Given(dir))
    }

    fn with(exe: PathBuf, base: Base) -> Result<Launcher, LaunchError> {
        interrupt::install().map_err(LaunchError::Signals)?;
        Ok(Launcher {
            exe,
            base: Some(base),
            placement: None,
            start_timeout: START_TIMEOUT,
            stop_timeout: STOP_TIMEOUT,
            nodes: Vec::new(),
            extras: Vec::new(),
        })
    }

    /// Places nodes with `p` (addresses, command-line wrapper).
    pub fn placement(mut self, p: impl Placement + 'static) -> Launcher {
        self.placement = Some(Arc::new(p));
        self
    }

    /// How long each node gets to be up.
    pub fn start_timeout(mut self, d: Duration) -> Launcher {
        self.start_timeout = d;
        self
    }

    /// How long processes get after SIGTERM before SIGKILL.
    pub fn stop_timeout(mut self, d: Duration) -> Launcher {
        self.stop_timeout = d;
        self
    }

    /// The base directory.
    pub fn base_dir(&self) -> &Path {
        self.base.as_ref().map_or(Path::new(""), Base::path)
    }

    /// Keeps the base directory (the nodes' data directories and logs) after the launcher
    /// stops, even a temporary one, and returns its path: for a run that failed, so its logs can
    /// be read.
    pub fn keep(&mut self) -> PathBuf {
        if let Some(Base::Temp(t)) = self.base.take_if(|b| matches!(b, Base::Temp(_))) {
            self.base = Some(Base::Given(t.keep()));
        }
        self.base_dir().to_path_buf()
    }

    fn check_name(&self, name: &str) -> Result<(), LaunchError> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(LaunchError::BadName(name.to_string()));
        }
        if self.nodes.iter().any(|s| s.spec.name == name) || self.extras.iter().any(|e| e.name == name) {
            return Err(LaunchError::Duplicate(name.to_string()));
        }
        Ok(())
    }

    /// Starts a node and waits until it is up.
    pub fn start(&mut self, spec: NodeSpec) -> Result<&Node, LaunchError> {
        let name = spec.name.clone();
        self.spawn(spec)?;
        self.wait_up()?;
        self.node(&name)
    }

    /// Starts a node without waiting for it ([`Launcher::wait_up`] waits for every started
    /// node), so several start together.
    pub fn spawn(&mut self, spec: NodeSpec) -> Result<(), LaunchError> {
        self.check_name(&spec.name)?;
        let data_dir = spec.data_dir.clone().unwrap_or_else(|| self.base_dir().join(&spec.name));
        let log = data_dir.join("node.log");
        let mut slot = Slot { spec, data_dir, log, child: None, up: None };
        launch(&self.exe, self.placement.as_deref(), &mut slot)?;
        self.nodes.push(slot);
        Ok(())
    }

    /// Waits until every started node is up: its `node.json` names the pid started, its API
    /// and P2P addresses. A node that exits first, or is not up within the start time-out, is
    /// an error quoting the end of its log.
    pub fn wait_up(&mut self) -> Result<(), LaunchError> {
        let deadline = Instant::now() + self.start_timeout;
        loop {
            let mut pending = false;
            for slot in self.nodes.iter_mut().filter(|s| s.up.is_none()) {
                let Some(pid) = slot.child.as_ref().map(Child::id) else { continue };
                if let Some(node) = read_up(slot, pid)? {
                    slot.up = Some(node);
                    continue;
                }
                let Some(child) = slot.child.as_mut() else { continue };
                if let Some(status) = child.try_wait().map_err(io("waiting for", &slot.data_dir))? {
                    slot.child = None;
                    return Err(LaunchError::Exited {
                        name: slot.spec.name.clone(),
                        status,
                        log: slot.log.clone(),
                        tail: tail(&slot.log, TAIL_LINES),
                    });
                }
                if Instant::now() >= deadline {
                    return Err(LaunchError::NotUp {
                        name: slot.spec.name.clone(),
                        after: self.start_timeout,
                        log: slot.log.clone(),
                        tail: tail(&slot.log, TAIL_LINES),
                    });
                }
                pending = true;
            }
            if !pending {
                return Ok(());
            }
            if interrupt::requested() {
                return Err(LaunchError::Interrupted);
            }
            std::thread::sleep(process::POLL * 2);
        }
    }

    /// Starts a bootstrap node (`bootstrap`), then `plan.peers` peers (`peer0`, ...) and
    /// `plan.miners` miners (`miner0`, ...) joining through it, and waits for all.
    pub fn start_network(&mut self, plan: &NetworkPlan) -> Result<(), LaunchError> {
        let configured = |spec: NodeSpec| match &plan.config {
            Some(c) => spec.config(c.clone()),
            None => spec,
        };
        let boot =
            self.start(configured(NodeSpec::new("bootstrap", Role::Bootstrap)))?.p2p_addr().to_string();
        for i in 0..plan.peers {
            self.spawn(configured(NodeSpec::new(format!("peer{i}"), Role::Peer)).bootstrap(&boot))?;
        }
        for i in 0..plan.miners {
            let spec = configured(NodeSpec::new(format!("miner{i}"), Role::Miner)).bootstrap(&boot);
            self.spawn(spec.miner_threads(plan.miner_threads))?;
        }
        self.wait_up()
    }

    /// The node `name`, if it is up.
    pub fn node(&self, name: &str) -> Result<&Node, LaunchError> {
        self.nodes
            .iter()
            .find(|s| s.spec.name == name)
            .and_then(|s| s.up.as_ref())
            .ok_or_else(|| LaunchError::Unknown(name.to_string()))
    }

    /// The nodes that are up, in start order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter_map(|s| s.up.as_ref())
    }

    /// The name and API client of each node that is up whose role `want` takes, in start
    /// order (`|r| r != Role::Bootstrap`: the peers and miners; `|r| r == Role::Peer`: the
    /// peers).
    pub fn clients(&self, want: impl Fn(Role) -> bool) -> Vec<(String, Client)> {
        self.nodes().filter(|n| want(n.role())).map(|n| (n.name().to_string(), n.client().clone())).collect()
    }

    /// Names and pids of the running processes (nodes, then extras).
    pub fn pids(&self) -> Vec<(String, u32)> {
        let nodes = self.nodes.iter().filter_map(|s| s.child.as_ref().map(|c| (s.spec.name.clone(), c.id())));
        let extras = self.extras.iter().filter_map(|e| e.child.as_ref().map(|c| (e.name.clone(), c.id())));
        nodes.chain(extras).collect()
    }

    /// The end of the log of the node or process `name`.
    pub fn log_tail(&self, name: &str, lines: usize) -> Result<String, LaunchError> {
        if let Some(s) = self.nodes.iter().find(|s| s.spec.name == name) {
            return Ok(tail(&s.log, lines));
        }
        let e =
            self.extras.iter().find(|e| e.name == name).ok_or_else(|| LaunchError::Unknown(name.into()))?;
        Ok(tail(&e.log, lines))
    }

    fn slot_mut(&mut self, name: &str) -> Result<&mut Slot, LaunchError> {
        self.nodes
            .iter_mut()
            .find(|s| s.spec.name == name)
            .ok_or_else(|| LaunchError::Unknown(name.to_string()))
    }

    /// Stops the node `name` (SIGTERM, bounded wait, SIGKILL); it can be restarted. `None` if
    /// it was not running.
    pub fn stop_node(&mut self, name: &str) -> Result<Option<Stopped>, LaunchError> {
        let timeout = self.stop_timeout;
        let slot = self.slot_mut(name)?;
        slot.up = None;
        let Some(mut child) = slot.child.take() else { return Ok(None) };
        let dir = slot.data_dir.clone();
        let r = process::stop_all(&mut [&mut child], timeout).pop();
        r.unwrap_or_else(|| Err(std::io::Error::other("no result")))
            .map(Some)
            .map_err(io("stopping the node in", &dir))
    }

    /// Kills the node `name` at once (SIGKILL), as a crash would; it can be restarted.
    pub fn kill_node(&mut self, name: &str) -> Result<Option<ExitStatus>, LaunchError> {
        let slot = self.slot_mut(name)?;
        slot.up = None;
        let Some(mut child) = slot.child.take() else { return Ok(None) };
        let dir = slot.data_dir.clone();
        let _ = child.kill();
        child.wait().map(Some).map_err(io("killing the node in", &dir))
    }

    /// Starts the node `name` again on its data directory (stopping it first if it runs) and
    /// waits until it is up.
    pub fn restart_node(&mut self, name: &str) -> Result<&Node, LaunchError> {
        self.stop_node(name)?;
        let placement = self.placement.as_deref();
        let slot = self
            .nodes
            .iter_mut()
            .find(|s| s.spec.name == name)
            .ok_or_else(|| LaunchError::Unknown(name.into()))?;
        launch(&self.exe, placement, slot)?;
        self.wait_up()?;
        self.node(name)
    }

    /// Starts an extra process `name` (`program args...`), its output appended to
    /// `BASE/<name>.log`; it is stopped like the nodes. Returns its pid.
    pub fn spawn_process<I, S>(
        &mut self,
        name: &str,
        program: impl AsRef<OsStr>,
        args: I,
    ) -> Result<u32, LaunchError>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.check_name(name)?;
        let log = self.base_dir().join(format!("{name}.log"));
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let mut cmd = Command::new(program.as_ref());
        cmd.args(&args);
        let child = spawn_logged(name, cmd, program.as_ref(), &args, &log)?;
        let pid = child.id();
        self.extras.push(Extra { name: name.to_string(), log, child: Some(child) });
        Ok(pid)
    }

    /// Stops the extra process `name`.
    pub fn stop_process(&mut self, name: &str) -> Result<Option<Stopped>, LaunchError> {
        let timeout = self.stop_timeout;
        let e = self
            .extras
            .iter_mut()
            .find(|e| e.name == name)
            .ok_or_else(|| LaunchError::Unknown(name.into()))?;
        let Some(mut child) = e.child.take() else { return Ok(None) };
        let log = e.log.clone();
        let r = process::stop_all(&mut [&mut child], timeout).pop();
        r.unwrap_or_else(|| Err(std::io::Error::other("no result")))
            .map(Some)
            .map_err(io("stopping the process logging to", &log))
    }

    /// Stops every process (SIGTERM together, one bounded wait, SIGKILL for the rest), then
    /// removes a temporary base directory.
    pub fn stop(mut self) -> Result<(), LaunchError> {
        self.stop_processes();
        match self.base.take() {
            Some(Base::Temp(t)) => {
                let path = t.path().to_path_buf();
                t.close().map_err(io("removing", &path))
            }
            _ => Ok(()),
        }
    }

    fn stop_processes(&mut self) {
        let timeout = self.stop_timeout;
        let mut children: Vec<Child> = self
            .extras
            .iter_mut()
            .filter_map(|e| e.child.take())
            .chain(self.nodes.iter_mut().filter_map(|s| {
                s.up = None;
                s.child.take()
            }))
            .collect();
        let mut refs: Vec<&mut Child> = children.iter_mut().collect();
        process::stop_all(&mut refs, timeout);
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.stop_processes();
        // The temporary directory (if any) is removed by its own drop, after the processes.
        self.base.take();
    }
}

/// Starts the process of `slot`: `exe node ...` as placed, its output appended to its log.
fn launch(exe: &Path, placement: Option<&dyn Placement>, slot: &mut Slot) -> Result<(), LaunchError> {
    let spec = &slot.spec;
    let dir = &slot.data_dir;
    std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
    // A node.json left by an earlier run must not be taken for this one's.
    match std::fs::remove_file(dir.join("node.json")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(LaunchError::Io { what: "removing", path: dir.join("node.json"), source: e })
        }
        _ => {}
    }
    let place = placement.map_or_else(Place::default, |p| p.place(&spec.name, spec.role));
    let mut args: Vec<OsString> = vec!["node".into(), "--role".into(), spec.role.as_str().into()];
    args.extend(["--data-dir".into(), dir.as_os_str().to_owned()]);
    args.extend(["--api".into(), place.api.clone().into(), "--listen".into(), place.listen.clone().into()]);
    for b in &spec.bootstrap {
        args.extend(["--bootstrap".into(), b.into()]);
    }
    if let Some(text) = &spec.config {
        let path = dir.join("node.toml");
        std::fs::write(&path, text).map_err(io("writing", &path))?;
        args.extend(["--config".into(), path.into_os_string()]);
    }
    args.extend(spec.args.iter().cloned());
    let (program, args) = match place.wrap.split_first() {
        Some((p, rest)) => {
            let mut all: Vec<OsString> = rest.to_vec();
            all.push(exe.to_path_buf().into_os_string());
            all.extend(args);
            (p.clone(), all)
        }
        None => (exe.to_path_buf().into_os_string(), args),
    };
    let mut cmd = Command::new(&program);
    cmd.args(&args).envs(spec.env.iter().map(|(k, v)| (k, v)));
    slot.child = Some(spawn_logged(&spec.name, cmd, &program, &args, &slot.log)?);
    slot.up = None;
    Ok(())
}

/// Spawns `cmd` with standard input closed and its output appended to `log`, after a line
/// naming the command.
fn spawn_logged(
    name: &str,
    mut cmd: Command,
    program: &OsStr,
    args: &[OsString],
    log: &Path,
) -> Result<Child, LaunchError> {
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
    }
    let mut out: File = OpenOptions::new().create(true).append(true).open(log).map_err(io("opening", log))?;
    let line: Vec<String> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    writeln!(out, "=== launcher: {} ===", line.join(" ")).map_err(io("writing", log))?;
    let err = out.try_clone().map_err(io("opening", log))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    cmd.spawn().map_err(|source| LaunchError::Spawn {
        name: name.to_string(),
        program: program.to_string_lossy().into_owned(),
        source,
    })
}

/// The node of `slot` if its `node.json` says it is up as process `pid`.
fn read_up(slot: &Slot, pid: u32) -> Result<Option<Node>, LaunchError> {
    let Ok(text) = std::fs::read_to_string(slot.data_dir.join("node.json")) else { return Ok(None) };
    // A file being replaced may be read half-written: not up yet.
    let Ok(info) = serde_json::from_str::<NodeInfo>(&text) else { return Ok(None) };
    if info.pid != pid {
        return Ok(None);
    }
    let name = slot.spec.name.clone();
    let api = info.api.clone().ok_or(LaunchError::Incomplete { name: name.clone(), what: "API address" })?;
    if info.p2p.is_empty() {
        return Err(LaunchError::Incomplete { name, what: "p2p address" });
    }
    // A node whose API listens beyond loopback (in a namespace) wrote a token for its writes.
    let token = Some(slot.data_dir.join("api_token")).filter(|p| p.exists());
    let client = match &token {
        Some(t) => ClientBuilder::new(&api).token_file(t).build()?,
        None => Client::new(&api)?,
    };
    Ok(Some(Node {
        token,
        name,
        role: slot.spec.role,
        data_dir: slot.data_dir.clone(),
        log: slot.log.clone(),
        info,
        api,
        client,
    }))
}

/// Polls `f` every 100 ms until it holds; an error naming `what` after `timeout`, or on
/// Ctrl-C.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) -> Result<(), LaunchError> {
    let deadline = Instant::now() + timeout;
    loop {
        if f() {
            return Ok(());
        }
        if interrupt::requested() {
            return Err(LaunchError::Interrupted);
        }
        if Instant::now() >= deadline {
            return Err(LaunchError::WaitTimeout { what: what.to_string(), after: timeout });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
