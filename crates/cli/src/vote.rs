//! `scalechain vote`: the voting application (seed 003). `demo` runs a whole election on an
//! in-process chain; the other subcommands run one over a node's HTTP API:
//!
//! - `keygen`: a voter's Ed25519 key file (offline);
//! - `election`: the EA's keys into `--ea-dir` (secret file mode 0600), the election published;
//! - `register`: the EA's registration token for a voter's public key (offline), at most the
//!   election's maximum of voters (listed in `--ea-dir`);
//! - `register --package-dir`: fresh voter keys, registered, one voter package each (what the
//!   explorer's booth opens);
//! - `cast`: a voter's encrypted ballot with its proofs and signature, submitted;
//! - `audit`: anyone's check of a ballot audited in the booth (it opens to the shown choice);
//! - `tally`: the election's ballots read from the chain's state, added, decrypted with proofs,
//!   the result file written;
//! - `verify`: anyone's check of a result file against the chain's ballots (exit 1 if wrong).
//!
//! The subcommands that talk to a node take the options every command shares
//! ([`crate::remote`]): `--api URL`, `--token T` or `--token-file FILE` (`--api-token T`, the
//! spelling before the options were shared, still works; in `cast`, whose `--token` is the
//! voter's registration token, it is the only one). The chain's hash function is the node's,
//! recognised from `/status` among the devnet parameter sets as the wallet does; `--hash`, which
//! used to say it, is accepted (hidden) for one release and refused when it names another. On a
//! chain outside those sets (a node configured with another block interval, say) the hash
//! function cannot be recognised and `--hash` still says it, sha256 by default.
//!
//! Exit codes: 0 done; 1 refused — by the node (an election it does not hold or still waits
//! for, a transaction it refuses), by the election's rules (`register` past the maximum,
//! `tally` before the window ends, a ballot checked before it is sent) — or a failed
//! verification (or `--hash` naming another hash function than the node's chain uses); 2 bad
//! usage or input (an argument, or a key, election or result file that is not one, or keys of
//! another election), IO, or an unreachable node.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Subcommand, ValueEnum};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{json, Value};

use scalechain_client::types::AppRange;
use scalechain_client::ClientError;
use scalechain_types::{Hash, HashKind, Scheme, SecretKey};
use scalechain_voting::app::{
    ballots_prefix, check_ballot, election_key, CastBallot, Election, Message, SchemeKey, VOTE_KIND,
};
use scalechain_voting::booth::{BallotAudit, BoothFileError, VoterPackage};
use scalechain_voting::tally::{self, EaKeys, StoredBallot, TallyError, TallyResult};
use scalechain_voting::{elgamal, paillier, Statement};

use crate::remote::{self, NodeOpts, TOKEN_ARG};
use crate::wallet::{self, WalletError, WalletOpts};
use crate::Fail;

/// The EA's secret key file inside `--ea-dir`.
const KEYS_FILE: &str = "ea-keys.json";
/// The election's public description inside `--ea-dir`.
const ELECTION_FILE: &str = "election.json";
/// The voters registered so far inside `--ea-dir`: one public key (hex) a line.
const REGISTRY_FILE: &str = "registered.txt";
/// Largest file read (key, election, result files).
const MAX_FILE: u64 = 1 << 20;
/// Ballots asked for per API request.
const PAGE: usize = 1000;
/// Pooled transactions looked through for an election not in the chain's state yet.
const PENDING_SCAN: usize = 1000;

/// Ballot schemes available.
#[derive(Clone, Copy, ValueEnum)]
pub enum BallotScheme {
    /// Exponential ElGamal on ristretto255.
    Elgamal,
    /// Paillier (2048-bit N) with the 1-out-of-L membership proof, seed 003's scheme.
    Paillier,
}

impl From<BallotScheme> for scalechain_voting::BallotScheme {
    fn from(s: BallotScheme) -> Self {
        match s {
            BallotScheme::Elgamal => scalechain_voting::BallotScheme::Elgamal,
            BallotScheme::Paillier => scalechain_voting::BallotScheme::Paillier,
        }
    }
}

/// `scalechain vote` subcommands.
#[derive(Subcommand)]
pub enum VoteCmd {
    /// Run a whole election on an in-process chain: setup, registration, ballots (honest and
    /// invalid), blocks, tally, decryption with proofs, verification.
    Demo {
        /// Honest voters.
        #[arg(long, default_value_t = 1000)]
        voters: usize,
        /// Candidates (1 of L).
        #[arg(long, default_value_t = 4)]
        candidates: usize,
        /// Ballot scheme.
        #[arg(long, value_enum, default_value_t = BallotScheme::Elgamal)]
        scheme: BallotScheme,
        /// Invalid ballots to submit (cycling through every kind).
        #[arg(long, default_value_t = 0)]
        invalid: usize,
        /// Print one JSON object as the last line.
        #[arg(long)]
        json: bool,
        /// Seed of every random choice.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Make a voter's key file (a fresh Ed25519 seed, hex, mode 0600); prints the public key.
    Keygen {
        /// The file to create (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
    /// As the election authority: make the keys into DIR and publish the election; prints its id.
    Election {
        #[command(flatten)]
        node: VoteNodeOpts,
        /// The EA's directory (created; must not hold keys already).
        #[arg(long)]
        ea_dir: PathBuf,
        /// Number of candidates.
        #[arg(long)]
        candidates: usize,
        /// Ballot scheme.
        #[arg(long, value_enum, default_value_t = BallotScheme::Elgamal)]
        scheme: BallotScheme,
        /// The most ballots the election counts, whatever the scheme: `register` mints no more
        /// tokens, and the chain refuses the ballot past it (for paillier it also fixes the
        /// encoding).
        #[arg(long)]
        voters_max: u64,
        /// First block height at which ballots count. Ballots enter blocks after the election's
        /// own, so choose at least the tip's height + 2 (the node's `GET /status` says it; a
        /// devnet makes about a block a second).
        #[arg(long)]
        start: u64,
        /// Last block height at which ballots count; the tally comes after it.
        #[arg(long)]
        end: u64,
        /// A label for people (at most 64 bytes).
        #[arg(long, default_value = "election")]
        label: String,
        /// The wallet paying the election's fee (ballots ride fee-less; an election pays like
        /// a transfer, so that publishing elections cannot crowd ballots out).
        #[arg(long, default_value = "wallet.json")]
        wallet: PathBuf,
        /// Read the wallet's passphrase from the first line of this file (otherwise from the
        /// environment variable SCALECHAIN_PASSPHRASE).
        #[arg(long)]
        passphrase_file: Option<PathBuf>,
        /// Fee per 1,000 bytes of the election transaction.
        #[arg(long, default_value_t = 1_000)]
        fee_rate: u64,
    },
    /// As the election authority: the registration token of a voter (offline); prints it. At
    /// most `--voters-max` voters get one (a voter registered again gets the same token). With
    /// `--package-dir DIR --count N` instead: N fresh voter keys, each registered, and one voter
    /// package per voter written into DIR (key, token and election id: the file the browser
    /// booth opens); prints each file and its voter's public key.
    Register {
        /// The EA's directory.
        #[arg(long)]
        ea_dir: PathBuf,
        /// The voter's Ed25519 public key, hex (the voter keeps the key: `vote keygen`).
        #[arg(long, required_unless_present = "package_dir", conflicts_with = "package_dir")]
        voter_pubkey: Option<String>,
        /// Where to write the voter packages (created; each file mode 0600, named
        /// voter-0001.json and on; existing files are not overwritten).
        #[arg(long, requires = "count")]
        package_dir: Option<PathBuf>,
        /// How many voters to make packages for.
        #[arg(long, requires = "package_dir")]
        count: Option<u64>,
    },
    /// As a voter: cast an encrypted ballot; prints the txid.
    // `--token` is the voter's registration token here: the node's token is `--api-token`.
    #[command(mut_arg(TOKEN_ARG, |a| a.long("api-token").alias(None::<&str>)))]
    Cast {
        #[command(flatten)]
        node: VoteNodeOpts,
        /// The election id, hex.
        #[arg(long)]
        election: String,
        /// The candidate (0-based).
        #[arg(long)]
        choice: usize,
        /// The voter's key file (from `vote keygen`).
        #[arg(long)]
        voter_key: PathBuf,
        /// The EA's registration token, hex.
        #[arg(long = "token", value_name = "TOKEN")]
        registration: String,
    },
    /// Anyone: check an audited ballot (the file the booth saves when a voter audits instead of
    /// casting): its proofs verify for its voter and election, and its ciphertexts open with the
    /// revealed randomness to the shown choice (exit 1 if not).
    Audit {
        #[command(flatten)]
        node: VoteNodeOpts,
        /// The audit file.
        #[arg(long)]
        audit: PathBuf,
    },
    /// As the election authority: tally the chain's ballots once the window has closed, decrypt
    /// with proofs, print the counts and write the result file.
    Tally {
        #[command(flatten)]
        node: VoteNodeOpts,
        /// The election id, hex.
        #[arg(long)]
        election: String,
        /// The EA's directory.
        #[arg(long)]
        ea_dir: PathBuf,
        /// The result file (default: DIR/result-<election id>.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Anyone: check a result file against the chain's ballots (exit 1 if it does not hold).
    Verify {
        #[command(flatten)]
        node: VoteNodeOpts,
        /// The election id, hex.
        #[arg(long)]
        election: String,
        /// The result file.
        #[arg(long)]
        result: PathBuf,
    },
}

/// How a subcommand reaches the node: the options every command shares, and `--hash`.
#[derive(clap::Args)]
pub struct VoteNodeOpts {
    #[command(flatten)]
    node: NodeOpts,
    /// The chain's hash function. The node's chain says it: accepted (hidden) for one release,
    /// refused when it is not the node's; on a chain outside the devnet parameter sets, used.
    #[arg(long, hide = true)]
    hash: Option<HashKind>,
}

/// Runs a `vote` subcommand.
pub fn run(cmd: VoteCmd) -> Result<(), Fail> {
    match cmd {
        VoteCmd::Demo { voters, candidates, scheme, invalid, json, seed } => {
            demo(voters, candidates, scheme, invalid, json, seed)
        }
        VoteCmd::Keygen { out } => keygen(&out),
        VoteCmd::Election {
            node,
            ea_dir,
            candidates,
            scheme,
            voters_max,
            start,
            end,
            label,
            wallet,
            passphrase_file,
            fee_rate,
        } => {
            let e = Published { candidates, scheme: scheme.into(), voters: voters_max, start, end, label };
            let pay = Payer { wallet, passphrase_file, fee_rate };
            election(&node, &ea_dir, &e, &pay)
        }
        VoteCmd::Register { ea_dir, voter_pubkey, package_dir, count } => match (voter_pubkey, package_dir) {
            (Some(pk), _) => register(&ea_dir, &pk),
            (None, Some(out)) => register_packages(&ea_dir, &out, count.unwrap_or(0)),
            (None, None) => Err(usage("register: give --voter-pubkey, or --package-dir and --count")),
        },
        VoteCmd::Audit { node, audit } => audit_cmd(&node, &audit),
        VoteCmd::Cast { node, election, choice, voter_key, registration } => {
            cast(&node, &election, choice, &voter_key, &registration)
        }
        VoteCmd::Tally { node, election, ea_dir, out } => tally_cmd(&node, &election, &ea_dir, out),
        VoteCmd::Verify { node, election, result } => verify_cmd(&node, &election, &result),
    }
}

fn usage(msg: impl Into<String>) -> Fail {
    Fail(2, msg.into())
}

fn random_seed() -> Result<[u8; 32], Fail> {
    let mut s = [0u8; 32];
    getrandom::fill(&mut s).map_err(|e| Fail(2, format!("no OS randomness: {e}")))?;
    Ok(s)
}

fn rng() -> Result<ChaCha20Rng, Fail> {
    Ok(ChaCha20Rng::from_seed(random_seed()?))
}

/// `s` (white space around it ignored) as `N` bytes of hex. The error says what is wrong —
/// where the first character that is not a hex digit is, or how many digits there are — but
/// never repeats `s`: it may be a key file's seed, or a token.
fn hex_array<const N: usize>(what: &str, s: &str) -> Result<[u8; N], Fail> {
    let s = s.trim();
    let digits = 2 * N;
    if let Some(at) = s.chars().position(|c| !c.is_ascii_hexdigit()) {
        return Err(usage(format!(
            "{what}: character {} of {} is not a hex digit (expected {digits} hex digits)",
            at + 1,
            s.chars().count()
        )));
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out)
        .map_err(|_| usage(format!("{what}: {} hex digits, not {digits}", s.len())))?;
    Ok(out)
}

fn read_small(path: &Path) -> Result<String, Fail> {
    let meta = std::fs::metadata(path).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    if meta.len() > MAX_FILE {
        return Err(usage(format!("{}: {} bytes, more than {MAX_FILE}", path.display(), meta.len())));
    }
    std::fs::read_to_string(path).map_err(|e| usage(format!("{}: {e}", path.display())))
}

/// Creates `path` (which must not exist) with `text`; mode 0600 when `secret`.
fn create_file(path: &Path, text: &str, secret: bool) -> Result<(), Fail> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut f = o.open(path).map_err(|e| usage(format!("creating {}: {e}", path.display())))?;
    f.write_all(text.as_bytes()).map_err(|e| usage(format!("writing {}: {e}", path.display())))
}

fn keygen(out: &Path) -> Result<(), Fail> {
    let seed = random_seed()?;
    create_file(out, &format!("{}\n", hex::encode(seed)), true)?;
    println!("{}", hex::encode(SecretKey::from_seed(Scheme::Ed25519, seed).public().as_bytes()));
    Ok(())
}

/// The voter's key from the key file `path` (a seed, hex, as `vote keygen` writes it). An
/// error names the file and what is wrong with it, never its contents.
fn voter_secret(path: &Path) -> Result<SecretKey, Fail> {
    let what = format!("voter key file {} (from `vote keygen`: one seed of 64 hex digits)", path.display());
    let seed = hex_array::<32>(&what, &read_small(path)?)?;
    Ok(SecretKey::from_seed(Scheme::Ed25519, seed))
}

fn pk32(k: &SecretKey) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(k.public().as_bytes());
    out
}

/// The node's HTTP API, and what its chain is.
struct Api {
    client: remote::Api,
    /// The chain's hash function.
    kind: HashKind,
    /// The tip height when the node was first asked.
    height: u64,
}

/// A failed API call: 2 when the node could not be reached or answered something that is not
/// the API's (as for bad usage and IO), 1 when it answered with an error.
fn api_fail(e: ClientError) -> Fail {
    match e {
        ClientError::Api { .. } => Fail(1, e.to_string()),
        e => Fail(2, e.to_string()),
    }
}

impl Api {
    /// The client of `o`'s node (`token_flag` is how the subcommand spells the token's flag)
    /// and its chain's hash function: that of the devnet parameter set its chain id names
    /// (refused when `--hash` names another), or, on a chain that is none, `--hash`'s (sha256
    /// by default).
    fn connect(o: &VoteNodeOpts, token_flag: &'static str) -> Result<Api, Fail> {
        let client = o.node.client_naming(token_flag)?;
        let status = client.status().map_err(api_fail)?;
        let kind = match remote::identify(&status.chain_id) {
            Some((params, _)) => {
                remote::check_hash(o.hash, params.hash)?;
                params.hash
            }
            None => o.hash.unwrap_or(HashKind::Sha256),
        };
        Ok(Api { client, kind, height: status.height })
    }

    /// Submits one transaction: its txid, or the node's refusal. The failure is a node that
    /// cannot be reached or does not answer as the API does.
    fn submit(&self, tx: &scalechain_types::Tx) -> Result<Result<String, Refusal>, Fail> {
        let r = self.client.submit(std::slice::from_ref(tx)).map_err(api_fail)?;
        let v = r.results.into_iter().next().ok_or_else(|| Fail(2, "POST /txs: no verdict".into()))?;
        if v.accepted {
            return v
                .txid
                .map(|t| Ok(t.to_string()))
                .ok_or_else(|| Fail(2, "POST /txs: no txid in the verdict".into()));
        }
        Ok(Err(Refusal {
            reason: v.reason.unwrap_or_else(|| "refused".into()),
            detail: v.detail.unwrap_or_default(),
        }))
    }

    /// The published election `id` (checked to hash to `id` under the chain's hash function).
    fn election(&self, id: &Hash) -> Result<Election, Fail> {
        let kind = self.kind;
        let entry = match self.client.app_value(VOTE_KIND.0, &election_key(id)) {
            Ok(e) => e,
            Err(e) if e.is_not_found() => return Err(self.not_published(id)),
            Err(e) => return Err(api_fail(e)),
        };
        let bytes =
            entry.value_bytes().map_err(|_| Fail(2, format!("election {id}: the value is not hex")))?;
        let e = Election::decode(&bytes).map_err(|e| Fail(2, format!("election {id}: {e}")))?;
        if e.id(kind) != *id {
            return Err(usage(format!(
                "election {id} does not hash to its id under {}: is the chain's hash function another (--hash)?",
                kind.name()
            )));
        }
        Ok(e)
    }

    /// Why election `id` is not in the chain's state (exit 1): its transaction waits in the
    /// node's mempool for a block — retry after the next one —, or the node knows nothing of
    /// it.
    fn not_published(&self, id: &Hash) -> Fail {
        match self.pending_election(id) {
            Ok(Some(txid)) => Fail(
                1,
                format!(
                    "election {id} is pending: its transaction {txid} waits in the node's mempool \
                     for a block; retry after the next block (a devnet makes about one a second)"
                ),
            ),
            Ok(None) => Fail(
                1,
                format!(
                    "election {id} is not published on this node's chain, nor waiting in its \
                     mempool: check the id, and that --api names a node of the chain it was \
                     published on"
                ),
            ),
            Err(Fail(code, why)) => Fail(
                code,
                format!("election {id} is not published on this node's chain (its mempool: {why})"),
            ),
        }
    }

    /// The pooled transaction publishing election `id`, if one of the first [`PENDING_SCAN`]
    /// transactions the node's mempool lists is.
    fn pending_election(&self, id: &Hash) -> Result<Option<Hash>, Fail> {
        let pool = self.client.mempool(Some(PENDING_SCAN)).map_err(api_fail)?;
        let vote_kind = VOTE_KIND.name();
        for txid in pool.txids {
            let t = match self.client.tx(&txid) {
                Ok(t) => t,
                // It left the pool since the list was made.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(api_fail(e)),
            };
            if t.tx.kind != vote_kind {
                continue;
            }
            let Ok(data) = hex::decode(&t.tx.data) else { continue };
            if matches!(Message::decode(&data), Ok(Message::Election(e)) if e.id(self.kind) == *id) {
                return Ok(Some(txid));
            }
        }
        Ok(None)
    }

    /// Every stored ballot of election `id`, and the lowest tip height they were read at.
    fn ballots(&self, id: &Hash) -> Result<(Vec<StoredBallot>, u64), Fail> {
        let prefix = ballots_prefix(id);
        // The state key inside the namespace: drop the kind byte.
        let mut range = AppRange { prefix: prefix[1..].to_vec(), after: None, limit: Some(PAGE) };
        let mut out = Vec::new();
        let mut height = u64::MAX;
        loop {
            let page = self.client.app_range(VOTE_KIND.0, &range).map_err(api_fail)?;
            height = height.min(page.height);
            for e in &page.entries {
                let k = e
                    .key_bytes()
                    .map_err(|_| Fail(2, format!("ballots of {id}: key {:?} is not hex", e.key)))?;
                let voter: [u8; 32] = k
                    .get(prefix.len() - 1..)
                    .and_then(|v| v.try_into().ok())
                    .ok_or_else(|| Fail(2, format!("ballots of {id}: key {} is not a ballot's", e.key)))?;
                let ballot = e
                    .value_bytes()
                    .map_err(|_| Fail(2, format!("ballots of {id}: the ballot of {} is not hex", e.key)))?;
                out.push(StoredBallot { voter: Hash(voter), ballot });
                range.after = Some(k);
            }
            if !page.more || page.entries.is_empty() {
                break;
            }
        }
        Ok((out, height))
    }
}

/// The node's refusal of a transaction: the rule or policy that refused it, and what was wrong.
struct Refusal {
    reason: String,
    detail: String,
}

impl Refusal {
    /// `reason: what`, the rule named once (the node puts the rule name before a consensus
    /// rule's detail: `vote-double-vote: voter … has already voted`).
    fn describe(&self) -> String {
        crate::wallet::rule_detail(&self.reason, &self.detail)
    }

    /// The pooled transaction an `app-conflict` refusal names (its detail ends with the txid).
    fn pooled(&self) -> Option<Hash> {
        self.detail.split_whitespace().last().and_then(|w| w.parse().ok())
    }

    /// The refusal of a ballot as a failure (exit 1), its voter named by the public key `vk`
    /// they hold (from the key file `key`), not by its hash: a second ballot while the first
    /// waits in the node's mempool (`app-conflict`) or once a block holds it
    /// (`vote-double-vote`). Other refusals are named with their rule, the fee-less budgets
    /// hinted at.
    fn of_ballot(&self, election: &Hash, vk: &[u8; 32], key: &Path) -> Fail {
        let voter = format!("voter {} (key file {})", hex::encode(vk), key.display());
        let what = match self.reason.as_str() {
            "app-conflict" => format!(
                "{voter} already has a ballot waiting for a block{} in election {election}: one \
                 ballot per voter, counted once a block holds it (app-conflict)",
                self.pooled().map_or_else(String::new, |t| format!(" (txid {t})"))
            ),
            "vote-double-vote" => {
                format!("vote-double-vote: {voter} has already voted in election {election} (a block holds the ballot)")
            }
            "fee-less-full" | "fee-less-group-full" | "low-fee" => format!(
                "{} (ballots carry no fee: the node holds them within mempool.max_fee_less_bytes, \
                 each election's within mempool.max_fee_less_group_bytes)",
                self.describe()
            ),
            _ => self.describe(),
        };
        Fail(1, format!("the node refused the ballot: {what}"))
    }
}

fn parse_id(s: &str) -> Result<Hash, Fail> {
    hex_array::<32>("election id", s).map(Hash)
}

fn election_file(dir: &Path) -> Result<(Election, HashKind), Fail> {
    let path = dir.join(ELECTION_FILE);
    let v: Value =
        serde_json::from_str(&read_small(&path)?).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let kind: HashKind = v["hash"]
        .as_str()
        .unwrap_or("")
        .parse()
        .map_err(|e| usage(format!("{}: hash: {e}", path.display())))?;
    let bytes = hex::decode(v["encoding"].as_str().unwrap_or(""))
        .map_err(|_| usage(format!("{}: encoding is not hex", path.display())))?;
    let e = Election::decode(&bytes).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok((e, kind))
}

fn ea_keys(dir: &Path) -> Result<EaKeys, Fail> {
    let path = dir.join(KEYS_FILE);
    EaKeys::from_json(&read_small(&path)?).map_err(|e| usage(format!("{}: {e}", path.display())))
}

/// An election to publish.
struct Published {
    candidates: usize,
    scheme: scalechain_voting::BallotScheme,
    voters: u64,
    start: u64,
    end: u64,
    label: String,
}

/// The wallet paying for a transaction, and at what rate.
struct Payer {
    wallet: PathBuf,
    passphrase_file: Option<PathBuf>,
    fee_rate: u64,
}

fn election(node: &VoteNodeOpts, dir: &Path, p: &Published, pay: &Payer) -> Result<(), Fail> {
    if dir.join(KEYS_FILE).exists() {
        return Err(usage(format!("{} already holds EA keys; use another directory", dir.display())));
    }
    let api = Api::connect(node, "--token")?;
    let tip = api.height;
    if p.end <= tip {
        return Err(usage(format!("the window ends at height {}, but the chain is at {tip} already", p.end)));
    }
    // The wallet pays through the same client, on the chain just recognised.
    let wallet_opts = WalletOpts {
        wallet: pay.wallet.clone(),
        passphrase_file: pay.passphrase_file.clone(),
        hash: Some(api.kind),
    };
    let payer = wallet::open(&wallet_opts)?;
    let keys = EaKeys::generate(p.scheme, &mut rng()?).map_err(|e| Fail(2, e.to_string()))?;
    let e =
        keys.election(p.candidates, p.start, p.end, p.voters, &p.label).map_err(|e| usage(e.to_string()))?;
    let kind = api.kind;
    let id = e.id(kind);
    // Funded before anything is written: a wallet that cannot pay leaves no keys behind.
    let data = Message::Election(e.clone()).encode();
    let built = wallet::fund_app_tx(&api.client, &wallet_opts, &payer, VOTE_KIND, &data, pay.fee_rate)?;
    let secret = keys.to_json().map_err(|x| Fail(2, x.to_string()))?;
    let public = json!({
        "id": id.to_string(),
        "hash": kind.name(),
        "scheme": p.scheme.name(),
        "candidates": p.candidates,
        "start": p.start,
        "end": p.end,
        "label": p.label,
        "encoding": hex::encode(e.encode()),
    });
    // Written before the transaction is sent, so that a published election never lacks its
    // keys; taken back when the node refuses it, so that the directory can be used again.
    let mut files = Written::new(dir)?;
    files
        .create(KEYS_FILE, &secret, true)
        .and_then(|()| files.create(ELECTION_FILE, &format!("{public:#}\n"), false))
        .map_err(|Fail(code, why)| Fail(code, format!("{why}{}", files.take_back())))?;
    match wallet::submit_built(&api.client, &built) {
        Ok(()) => {}
        Err(WalletError::Refused { reason, detail, .. }) => {
            let r = Refusal { reason, detail };
            let hint = if r.reason == "low-fee" {
                " (an election pays at least the node's minimum fee rate: raise --fee-rate)"
            } else {
                ""
            };
            return Err(Fail(
                1,
                format!(
                    "the node refused the election's transaction {}: {}{hint}; nothing was published{}",
                    built.txid,
                    r.describe(),
                    files.take_back()
                ),
            ));
        }
        Err(x) => {
            return Err(Fail(
                x.code(),
                format!(
                    "{x} (the keys stay in {}: if transaction {} reached the node, they are its \
                     election's; if the node does not know it, remove them before publishing from \
                     there again)",
                    dir.display(),
                    built.txid
                ),
            ))
        }
    }
    eprintln!(
        "election published in transaction {} (fee {} for {} bytes); keys in {}; ballots can be \
         cast once a block holds it (the chain is at height {tip}, its window heights {} to {})",
        built.txid,
        built.fee,
        built.size,
        dir.display(),
        p.start,
        p.end
    );
    println!("{id}");
    Ok(())
}

/// The files `vote election` writes into the EA's directory before it submits the election,
/// to be taken back if the node refuses it.
struct Written<'a> {
    dir: &'a Path,
    /// Whether this run made the directory (removed with the files, if empty).
    made_dir: bool,
    files: Vec<PathBuf>,
}

impl<'a> Written<'a> {
    /// `dir`, made if missing.
    fn new(dir: &'a Path) -> Result<Written<'a>, Fail> {
        let made_dir = !dir.is_dir();
        std::fs::create_dir_all(dir).map_err(|x| usage(format!("creating {}: {x}", dir.display())))?;
        Ok(Written { dir, made_dir, files: Vec::new() })
    }

    /// Creates `dir/name` ([`create_file`]).
    fn create(&mut self, name: &str, text: &str, secret: bool) -> Result<(), Fail> {
        let path = self.dir.join(name);
        create_file(&path, text, secret)?;
        self.files.push(path);
        Ok(())
    }

    /// Removes what was written (and the directory if this run made it and it is empty), so
    /// that the directory can be used again; says so, or what is left, for a message.
    fn take_back(&mut self) -> String {
        let mut left = Vec::new();
        for path in self.files.drain(..) {
            if let Err(e) = std::fs::remove_file(&path) {
                left.push(format!("{} ({e})", path.display()));
            }
        }
        if left.is_empty() {
            if self.made_dir {
                // Only if empty: it holds nothing else of this run's.
                let _ = std::fs::remove_dir(self.dir);
            }
            format!("; {} holds no keys of it: publish again with the same --ea-dir", self.dir.display())
        } else {
            format!("; remove {} before publishing again with the same --ea-dir", left.join(", "))
        }
    }
}

/// The EA's keys and election from `dir`, checked to belong together, and the election's
/// maximum of voters.
fn ea_election(dir: &Path) -> Result<(EaKeys, Election, HashKind, u64), Fail> {
    let keys = ea_keys(dir)?;
    let (e, kind) = election_file(dir)?;
    if !keys.runs(&e) {
        return Err(usage(format!("the keys in {} are not those of its election", dir.display())));
    }
    let max = e.voters().map_err(|x| usage(format!("{}: {x}", dir.join(ELECTION_FILE).display())))?;
    Ok((keys, e, kind, max))
}

fn register(dir: &Path, voter_pubkey: &str) -> Result<(), Fail> {
    let voter = hex_array::<32>("voter public key", voter_pubkey)?;
    let (keys, e, kind, max) = ea_election(dir)?;
    enrol(&dir.join(REGISTRY_FILE), &voter, max)?;
    println!("{}", hex::encode(keys.register(kind, &e.id(kind), &voter)));
    Ok(())
}

/// `count` fresh voters, each registered (within the election's maximum) and given a voter
/// package in `out`: `voter-0001.json` and on, the first numbers whose files do not exist.
fn register_packages(dir: &Path, out: &Path, count: u64) -> Result<(), Fail> {
    if count == 0 {
        return Err(usage("--count: at least 1 voter"));
    }
    let (keys, e, kind, max) = ea_election(dir)?;
    let registry = dir.join(REGISTRY_FILE);
    let listed = match std::fs::read_to_string(&registry) {
        Ok(text) => text.lines().filter(|l| !l.trim().is_empty()).count() as u64,
        Err(x) if x.kind() == std::io::ErrorKind::NotFound => 0,
        Err(x) => return Err(usage(format!("{}: {x}", registry.display()))),
    };
    if listed.saturating_add(count) > max {
        return Err(Fail(
            1,
            format!(
                "--count {count}: the election counts at most {max} voters and {} lists {listed} \
                 registered already: room for {} (the chain would refuse the ballot past the \
                 maximum, vote-election-full)",
                registry.display(),
                max.saturating_sub(listed)
            ),
        ));
    }
    std::fs::create_dir_all(out).map_err(|x| usage(format!("creating {}: {x}", out.display())))?;
    let id = e.id(kind);
    let mut number = 0u64;
    for _ in 0..count {
        let path = loop {
            number += 1;
            let p = out.join(format!("voter-{number:04}.json"));
            if !p.exists() {
                break p;
            }
        };
        let seed = random_seed()?;
        let voter = pk32(&SecretKey::from_seed(Scheme::Ed25519, seed));
        enrol(&registry, &voter, max)?;
        let package =
            VoterPackage { election: id, hash: kind, seed, token: keys.register(kind, &id, &voter) };
        create_file(&path, &package.to_json(), true)?;
        println!("{} {}", path.display(), hex::encode(voter));
    }
    eprintln!(
        "{count} voter packages for election {id} in {} (each holds its voter's secret key: hand \
         each to its voter only; the booth is at /explorer/election/{id}/booth on a node's API \
         address)",
        out.display()
    );
    Ok(())
}

fn audit_cmd(node: &VoteNodeOpts, path: &Path) -> Result<(), Fail> {
    let at = |x: BoothFileError| usage(format!("{}: {x}", path.display()));
    let audit = BallotAudit::from_json(&read_small(path)?).map_err(at)?;
    let api = Api::connect(node, "--token")?;
    let e = api.election(&audit.election)?;
    match audit.check(api.kind, &e) {
        Ok(choice) => {
            println!(
                "ok: ballot {} of election {} encrypts a vote for candidate {choice} only: its \
                 proofs verify for voter {}, and its ciphertexts open with the revealed randomness \
                 (an audited ballot is never cast)",
                audit.tracker,
                audit.election,
                hex::encode(audit.voter_key)
            );
            Ok(())
        }
        Err(x @ BoothFileError::Fails(_)) => Err(Fail(1, format!("{}: {x}", path.display()))),
        Err(x) => Err(at(x)),
    }
}

/// Lists `voter` in the registry file `path` (created if missing), unless it is there already,
/// while fewer than `max` voters are: past the election's maximum no token is minted (exit 1),
/// since the chain would refuse the ballot (`vote-election-full`). The file is locked while it
/// is read and extended, so two registrations at once cannot both take the last place.
fn enrol(path: &Path, voter: &[u8; 32], max: u64) -> Result<(), Fail> {
    use std::io::{BufRead, BufReader};
    let at = |e: std::io::Error| usage(format!("{}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new().read(true).append(true).create(true).open(path).map_err(at)?;
    f.lock().map_err(at)?;
    let mut listed = 0u64;
    for (i, line) in BufReader::new(&f).lines().enumerate() {
        let line = line.map_err(at)?;
        if line.trim().is_empty() {
            continue;
        }
        let key = hex_array::<32>(&format!("{} line {}", path.display(), i + 1), &line)?;
        if key == *voter {
            return Ok(());
        }
        listed += 1;
    }
    if listed >= max {
        return Err(Fail(
            1,
            format!(
                "the election counts at most {max} voters, and {} lists {listed} registered already: \
                 no token for another (the chain would refuse the ballot past the maximum, \
                 vote-election-full)",
                path.display()
            ),
        ));
    }
    writeln!(f, "{}", hex::encode(voter)).map_err(|e| usage(format!("writing {}: {e}", path.display())))
}

fn cast(node: &VoteNodeOpts, election: &str, choice: usize, key: &Path, token: &str) -> Result<(), Fail> {
    let id = parse_id(election)?;
    let token = hex_array::<64>("token", token)?;
    let voter = voter_secret(key)?;
    let api = Api::connect(node, "--api-token")?;
    let kind = api.kind;
    let e = api.election(&id)?;
    let l = usize::from(e.candidates);
    if choice >= l {
        return Err(usage(format!("choice {choice}: the election has candidates 0 to {}", l - 1)));
    }
    let vk = pk32(&voter);
    let vid = kind.hash(&vk);
    let st = Statement { election: &id.0, voter: &vid.0 };
    let mut r = rng()?;
    let fail = |x: scalechain_voting::VoteError| Fail(2, format!("encrypting the ballot: {x}"));
    let ballot = match e.check().map_err(|x| Fail(1, format!("election {id}: {x}")))? {
        SchemeKey::Elgamal(k) => elgamal::cast(&k, &st, choice, l, &mut r).map_err(fail)?.encode(),
        SchemeKey::Paillier(k) => paillier::cast(&k, &st, choice, l, &mut r)
            .map_err(fail)?
            .encode(k.public.modulus_bytes())
            .map_err(fail)?,
    };
    let mut b = CastBallot { election: e, voter_key: vk, token, ballot, signature: [0; 64] };
    b.signature = voter.sign(&b.signing_message(kind));
    // The checks every node makes, here first (a wrong token is named before anything is sent).
    check_ballot(kind, &b)
        .map_err(|x| Fail(1, format!("the ballot is not valid: {}: {}", x.rule, x.detail)))?;
    let txid = api.submit(&Message::Ballot(b).into_tx())?.map_err(|r| r.of_ballot(&id, &vk, key))?;
    println!("{txid}");
    Ok(())
}

/// A failure of the tally or its verification: 2 for bad input (a key or result file that is not
/// one, keys of another election), 1 for what the chain's ballots or the result do not pass.
fn tally_fail(x: TallyError) -> Fail {
    match x {
        TallyError::KeyFile(_) | TallyError::ResultFile(_) | TallyError::NotTheElection(_) => {
            usage(x.to_string())
        }
        TallyError::Election { .. }
        | TallyError::Ballot { .. }
        | TallyError::Mismatch(_)
        | TallyError::Vote(_) => Fail(1, x.to_string()),
    }
}

fn print_counts(r: &TallyResult) {
    for (i, c) in r.counts.iter().enumerate() {
        println!("candidate {i}: {c}");
    }
}

fn tally_cmd(node: &VoteNodeOpts, election: &str, dir: &Path, out: Option<PathBuf>) -> Result<(), Fail> {
    let id = parse_id(election)?;
    let keys = ea_keys(dir)?;
    let api = Api::connect(node, "--token")?;
    let kind = api.kind;
    let e = api.election(&id)?;
    let (stored, height) = api.ballots(&id)?;
    if height < e.end {
        return Err(Fail(
            1,
            format!(
                "the voting window is open until height {} (the chain is at {height}): tally after it",
                e.end
            ),
        ));
    }
    let r = tally::tally(&e, kind, &stored, &keys, &mut rng()?).map_err(tally_fail)?;
    let path = out.unwrap_or_else(|| dir.join(format!("result-{id}.json")));
    let text = r.to_json().map_err(|x| Fail(2, x.to_string()))?;
    std::fs::write(&path, format!("{text}\n"))
        .map_err(|x| usage(format!("writing {}: {x}", path.display())))?;
    println!("election {id}: {} ballots", r.ballots);
    print_counts(&r);
    eprintln!("result and proofs in {}", path.display());
    Ok(())
}

fn verify_cmd(node: &VoteNodeOpts, election: &str, result: &Path) -> Result<(), Fail> {
    let id = parse_id(election)?;
    let r = TallyResult::from_json(&read_small(result)?).map_err(|x| match tally_fail(x) {
        Fail(code, why) => Fail(code, format!("{}: {why}", result.display())),
    })?;
    let api = Api::connect(node, "--token")?;
    let kind = api.kind;
    let e = api.election(&id)?;
    let (stored, _) = api.ballots(&id)?;
    tally::verify(&e, kind, &stored, &r, &mut rng()?)
        .map_err(|x| Fail(1, format!("verification failed: {x}")))?;
    println!("ok: election {id}, {} ballots, every ballot and decryption proof verifies", r.ballots);
    print_counts(&r);
    Ok(())
}

fn demo(
    voters: usize,
    candidates: usize,
    scheme: BallotScheme,
    invalid: usize,
    json: bool,
    seed: u64,
) -> Result<(), Fail> {
    let opts = scalechain_voting::demo::DemoOpts { scheme: scheme.into(), voters, candidates, invalid, seed };
    let r = scalechain_voting::demo::run(&opts).map_err(|e| Fail(2, e.to_string()))?;
    if json {
        println!("{}", r.json());
    } else {
        println!("election: {voters} voters, {candidates} candidates, scheme {}", r.scheme);
        println!("  tally    {:?}", r.tally);
        println!("  expected {:?}", r.expected);
        println!("  verified {}", r.verified);
        println!(
            "  invalid ballots: {} cast, {} rejected {:?}",
            r.invalid_cast, r.rejected_invalid, r.rejected_by_rule
        );
        println!(
            "  {:.1} ballots/s confirmed end to end, latency p50 {:.1} ms p99 {:.1} ms, {} blocks",
            r.ballots_per_s, r.latency_ms.p50, r.latency_ms.p99, r.blocks
        );
        println!(
            "  voters' encryption + proofs {:.2} s (client side), tally + decryption {:.2} s",
            r.cast_s, r.tally_s
        );
    }
    if r.tally != r.expected || !r.verified || r.rejected_invalid != r.invalid_cast {
        return Err(Fail(1, "the election did not verify".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::{CommandFactory, Parser};

    fn parse(args: &[&str]) -> Result<VoteCmd, clap::Error> {
        let argv = ["scalechain", "vote"].into_iter().chain(args.iter().copied());
        match crate::Cli::try_parse_from(argv)?.cmd {
            crate::Cmd::Vote { cmd } => Ok(cmd),
            _ => panic!("not a vote command: {args:?}"),
        }
    }

    fn help(sub: &str) -> String {
        let mut cli = crate::Cli::command();
        let vote = cli.find_subcommand_mut("vote").unwrap();
        vote.find_subcommand_mut(sub).unwrap().render_long_help().to_string()
    }

    /// `r`'s failure: its exit code and message (`Fail` has no `Debug` to unwrap with).
    fn failure<T>(r: Result<T, Fail>) -> (u8, String) {
        match r {
            Ok(_) => panic!("expected a failure"),
            Err(Fail(code, msg)) => (code, msg),
        }
    }

    fn succeeds<T>(r: Result<T, Fail>) -> T {
        r.unwrap_or_else(|Fail(code, msg)| panic!("exit {code}: {msg}"))
    }

    #[test]
    fn register_lists_voters_up_to_the_elections_maximum() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(REGISTRY_FILE);
        let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        succeeds(enrol(&path, &a, 2));
        succeeds(enrol(&path, &b, 2));
        succeeds(enrol(&path, &a, 2)); // registered again: listed once
        let (code, msg) = failure(enrol(&path, &c, 2));
        assert_eq!(code, 1, "a refusal: {msg}");
        assert!(msg.contains("at most 2 voters") && msg.contains("vote-election-full"), "{msg}");
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
        // A damaged registry is named, line and all.
        std::fs::write(&path, format!("{}\nnot a key\n", hex::encode(a))).unwrap();
        let (code, msg) = failure(enrol(&path, &c, 5));
        assert!(code == 2 && msg.contains("line 2"), "{code}: {msg}");
    }

    fn refusal(reason: &str, detail: &str) -> Refusal {
        Refusal { reason: reason.into(), detail: detail.into() }
    }

    #[test]
    fn a_refusal_names_its_rule_once() {
        let (id, vk, key) = (Hash([7; 32]), [9u8; 32], Path::new("alice.key"));
        // A consensus rule: the node's detail starts with the rule.
        let r = refusal(
            "vote-outside-window",
            "vote-outside-window: height 30 is outside the voting window 2..=20",
        );
        assert_eq!(r.describe(), "vote-outside-window: height 30 is outside the voting window 2..=20");
        let Fail(code, msg) = r.of_ballot(&id, &vk, key);
        assert_eq!((code, msg.matches("vote-outside-window").count()), (1, 1), "{msg}");
        // A policy: the detail does not.
        let r = refusal("fee-less-group-full", "1 bytes of fee-less application transaction would …");
        assert_eq!(r.describe(), "fee-less-group-full: 1 bytes of fee-less application transaction would …");
        assert_eq!(refusal("lost", "").describe(), "lost");
    }

    #[test]
    fn a_second_ballot_is_told_whose_ballot_waits_and_where() {
        let (id, vk, key) = (Hash([7; 32]), [9u8; 32], Path::new("alice.key"));
        let pooled = Hash([4; 32]);
        // As the node words it (MempoolError::AppConflict): the key is a hash of the voter's.
        let r = refusal(
            "app-conflict",
            &format!(
                "application key {} of kind 2 is already held by pooled transaction {pooled}",
                Hash([5; 32])
            ),
        );
        let Fail(code, msg) = r.of_ballot(&id, &vk, key);
        assert_eq!(code, 1);
        assert!(msg.contains(&format!("voter {} (key file alice.key)", hex::encode(vk))), "{msg}");
        assert!(msg.contains(&format!("waiting for a block (txid {pooled})")), "{msg}");
        assert!(!msg.contains(&Hash([5; 32]).to_string()), "not the key's hash: {msg}");
        // Once a block holds the first: the rule, once, and the voter by their key.
        let voter_id = Hash([6; 32]);
        let r = refusal("vote-double-vote", &format!("vote-double-vote: voter {voter_id} has already voted"));
        let Fail(_, msg) = r.of_ballot(&id, &vk, key);
        assert_eq!(msg.matches("vote-double-vote").count(), 1, "{msg}");
        assert!(msg.contains(&hex::encode(vk)) && !msg.contains(&voter_id.to_string()), "{msg}");
    }

    #[test]
    fn a_key_file_that_is_not_a_key_is_named_but_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let seed = "3f".repeat(32);
        let cases = [
            ("notes.txt", "my secret diary: the safe opens with 4711\n".to_string(), "character 1 of 41"),
            ("stray.key", format!("{}z{}\n", &seed[..20], &seed[21..]), "character 21 of 64"),
            ("long.key", format!("{seed}ab\n"), "66 hex digits, not 64"),
        ];
        for (name, text, says) in cases {
            let path = dir.path().join(name);
            std::fs::write(&path, &text).unwrap();
            let (code, msg) = failure(voter_secret(&path));
            assert_eq!(code, 2, "{msg}");
            assert!(msg.contains(&path.display().to_string()) && msg.contains(says), "{msg}");
            for word in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 4) {
                assert!(!msg.contains(word), "{name}: {word:?} echoed in {msg}");
            }
            assert!(!msg.contains(&seed[..8]), "{msg}");
        }
        assert_eq!(
            succeeds(voter_secret(&{
                let p = dir.path().join("good.key");
                std::fs::write(&p, format!("{seed}\n")).unwrap();
                p
            }))
            .public(),
            SecretKey::from_seed(Scheme::Ed25519, [0x3f; 32]).public()
        );
        // The same for a token or a key given on the command line.
        let (_, msg) = failure(hex_array::<64>("token", "deadbeef"));
        assert!(msg.contains("8 hex digits, not 128") && !msg.contains("deadbeef"), "{msg}");
    }

    #[test]
    fn an_election_the_node_refused_leaves_its_directory_usable_again() {
        let tmp = tempfile::tempdir().unwrap();
        // A directory this run made goes with the keys; one that was there stays, emptied.
        for (dir, made) in [(tmp.path().join("new/ea"), true), (tmp.path().to_path_buf(), false)] {
            let mut files = succeeds(Written::new(&dir));
            succeeds(files.create(KEYS_FILE, "{}", true));
            succeeds(files.create(ELECTION_FILE, "{}", false));
            assert!(dir.join(KEYS_FILE).exists());
            let said = files.take_back();
            assert!(said.contains("publish again with the same --ea-dir"), "{said}");
            assert!(!dir.join(KEYS_FILE).exists() && !dir.join(ELECTION_FILE).exists());
            assert_eq!(dir.exists(), !made, "{}", dir.display());
        }
    }

    #[test]
    fn a_result_file_that_is_not_one_is_bad_input() {
        let tmp = tempfile::tempdir().unwrap();
        let id = "ab".repeat(32);
        for (name, text) in [("notes.txt", "not JSON"), ("empty.json", "{}"), ("list.json", "[1, 2]")] {
            let path = tmp.path().join(name);
            std::fs::write(&path, text).unwrap();
            // Judged before the node is asked (nothing listens on port 1).
            let args =
                ["verify", "--api", "127.0.0.1:1", "--election", &id, "--result", path.to_str().unwrap()];
            let (code, msg) = failure(run(parse(&args).unwrap()));
            assert_eq!(code, 2, "{name}: {msg}");
            assert!(msg.contains(name), "{msg}");
        }
        // What the chain's ballots or the result do not pass is a refusal.
        assert_eq!(tally_fail(TallyError::Mismatch("3 ballots in the result, 2 on chain".into())).0, 1);
        assert_eq!(tally_fail(TallyError::NotTheElection(Hash([1; 32]))).0, 2);
    }

    #[test]
    fn the_old_spellings_still_parse_hidden() {
        let tally = ["tally", "--api", "127.0.0.1:1", "--election", "ab", "--ea-dir", "ea"];
        for token in ["--token", "--api-token"] {
            let Ok(VoteCmd::Tally { node, .. }) =
                parse(&[&tally[..], &[token, "t", "--hash", "blake3"]].concat())
            else {
                panic!("tally with {token}")
            };
            assert_eq!(node.node.token.token.as_deref(), Some("t"), "{token}");
            assert_eq!(node.hash, Some(HashKind::Blake3));
        }
        let Ok(VoteCmd::Tally { node, .. }) = parse(&tally) else { panic!("tally") };
        assert_eq!((node.node.token.token, node.hash), (None, None), "--hash is not needed");
        let Ok(VoteCmd::Verify { node, .. }) = parse(&["verify", "--election", "ab", "--result", "r"]) else {
            panic!("verify")
        };
        assert_eq!(node.node.api, None, "--api defaults as in every command");
        let h = help("tally");
        assert!(h.contains("--token <TOKEN>") && h.contains("--token-file"), "{h}");
        assert!(!h.contains("--hash") && !h.contains("api-token"), "hidden: {h}");
    }

    #[test]
    fn cast_keeps_token_for_the_voter_and_api_token_for_the_node() {
        let cast = ["cast", "--api", "x:1", "--election", "ab", "--choice", "1", "--voter-key", "k"];
        let args = [&cast[..], &["--token", "REG", "--api-token", "BEARER"]].concat();
        let Ok(VoteCmd::Cast { node, registration, .. }) = parse(&args) else { panic!("cast") };
        assert_eq!((registration.as_str(), node.node.token.token.as_deref()), ("REG", Some("BEARER")));
        let Ok(VoteCmd::Cast { node, .. }) = parse(&[&cast[..], &["--token", "REG"]].concat()) else {
            panic!("cast without the node's token")
        };
        assert_eq!(node.node.token.token, None);
        let clash = [&cast[..], &["--token", "REG", "--api-token", "B", "--token-file", "f"]].concat();
        assert_eq!(parse(&clash).err().map(|e| e.kind()), Some(clap::error::ErrorKind::ArgumentConflict));
        assert!(parse(&cast).is_err(), "the registration token is required");
        let h = help("cast");
        assert!(h.contains("--api-token <TOKEN>") && h.contains("--token <TOKEN>"), "{h}");
    }
}
