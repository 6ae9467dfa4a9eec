//! The study's node settings as a node takes them: the configuration each study `Setting`
//! writes parses and makes the chain the load signs for; a chain that declares in its genesis
//! that it skips signatures mines a transfer with a forged signature, which the devnet chain
//! refuses; and a node configured for such a chain refuses a data directory of another.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use scalechain_client::types::TxState;
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Params};
use scalechain_lab::launcher::{LaunchError, Launcher, NetworkPlan, NodeSpec, Role};
use scalechain_node::{params_of, NodeConfig};
use scalechain_study::exp::e2e::Setting;
use scalechain_types::{Amount, OutPoint, Tx, TxIn, TxKind, TxOut, Witness};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

#[test]
fn study_settings_are_node_configurations_of_the_chains_they_name() {
    let all = Setting {
        target_block_ms: Some(50),
        skip_signatures: true,
        single_lock: true,
        execute_ms: 200,
        execute_under_lock: true,
        arrivals: Some(1_000),
    };
    for s in [
        Setting::default(),
        Setting { target_block_ms: Some(200), ..Setting::default() },
        Setting { skip_signatures: true, ..Setting::default() },
        Setting { single_lock: true, ..Setting::default() },
        Setting { execute_ms: 500, ..Setting::default() },
        all,
    ] {
        let cfg = s.config().map_or_else(NodeConfig::default, |t| NodeConfig::from_toml(&t).unwrap());
        assert_eq!(params_of(&cfg), s.params(), "{s:?}");
        assert_eq!(cfg.mempool.pool_config().unwrap().single_lock, s.single_lock, "{s:?}");
        let execution = cfg.mempool.execution().unwrap();
        assert_eq!(
            execution.map(|e| (e.ms, e.under_lock)),
            (s.execute_ms > 0).then_some((s.execute_ms, s.execute_under_lock)),
            "{s:?}"
        );
        assert_eq!(cfg.arrivals.capacity, s.arrivals.unwrap_or(NodeConfig::default().arrivals.capacity));
    }
}

/// Premine output `i` back to its own key less a fee, its signature forged.
fn forged(p: &Params, i: u32) -> Tx {
    let key = devnet_premine_key(SigMode::Ed25519, u64::from(i));
    let out = p.premine[i as usize];
    let prev = OutPoint { txid: genesis_block(p).txs[0].txid(p.hash), index: i };
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn { prev, witness: Witness { pubkey: key.public(), signature: [0; 64] } }],
        outputs: vec![TxOut { value: Amount::new(out.value.get() - 10_000).unwrap(), lock: out.lock }],
        data: vec![],
    };
    tx.sign_inputs_with(p.hash, &p.chain_id(), &key);
    tx.inputs[0].witness.signature[5] ^= 0x40;
    tx
}

#[test]
fn only_a_chain_declaring_it_takes_forged_signatures_and_its_nodes_keep_to_it() {
    let base = tempfile::tempdir().unwrap();
    for skip in [false, true] {
        let setting = Setting { skip_signatures: skip, ..Setting::default() };
        let dir = base.path().join(if skip { "skip" } else { "checked" });
        let mut net = Launcher::with_base(EXE, &dir).unwrap();
        let plan = NetworkPlan { peers: 0, miners: 1, miner_threads: 1, config: setting.config() };
        net.start_network(&plan).unwrap();
        let miner = net.nodes().find(|n| n.role() == Role::Miner).unwrap().blocking_client().unwrap();
        let tx = forged(&setting.params(), 3);
        let verdict = miner.submit(std::slice::from_ref(&tx)).unwrap().results.remove(0);
        if skip {
            assert!(verdict.accepted, "{verdict:?}");
            let txid = tx.txid(setting.params().hash);
            let t0 = Instant::now();
            while miner.tx(&txid).unwrap().status != TxState::Confirmed {
                assert!(t0.elapsed() < Duration::from_secs(30), "not mined");
                std::thread::sleep(Duration::from_millis(100));
            }
        } else {
            assert!(!verdict.accepted);
            assert_eq!(verdict.reason.as_deref(), Some("bad-signature"), "{verdict:?}");
        }
        net.stop().unwrap();
    }
    // A node configured for the chain that skips signatures, on the devnet chain's data: it
    // refuses to start rather than skip a signature there.
    let miner_dir = base.path().join("checked").join("miner0");
    let skip = Setting { skip_signatures: true, ..Setting::default() }.config().unwrap();
    let mut again = Launcher::with_base(EXE, base.path().join("again")).unwrap();
    let spec = NodeSpec::new("again", Role::Peer).data_dir(&miner_dir).config(skip);
    match again.start(spec) {
        Err(LaunchError::Exited { tail, .. }) => {
            assert!(tail.contains("data directory holds chain"), "{tail}")
        }
        Err(e) => panic!("expected the node to refuse the data directory, got {e}"),
        Ok(_) => panic!("a node skipping signatures opened the devnet chain"),
    }
}
