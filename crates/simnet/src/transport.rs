//! The transport's cost, measured: the CPU the node's libp2p stack (TCP on loopback, noise,
//! yamux, gossipsub's framing, message ids and validation hand-off) takes per byte of gossip,
//! on this machine. Two of the node's own network tasks (`p2p::net`) run in this process, one
//! publishing messages of a given size and the other receiving and accepting each; the CPU the
//! process used over the exchange, less what the two used idle for as long, divided by the
//! bytes and by two (a sender and a receiver), is the cost per byte of one side.
//!
//! Must not: be fitted to a simulation (it measures an exchange of two nodes, never a
//! scenario), or leave a task or a socket behind (the runtime is dropped before returning).

use std::time::{Duration, Instant};

use scalechain_p2p::msg::{ProtocolNames, Topic};
use scalechain_p2p::net::{self, Command, Net, NetConfig, NetEvent};
use scalechain_p2p::protocol::Verdict;
use scalechain_types::Hash;

use crate::calibrate::CalibrationError;

/// Longest wait for the two tasks to connect, and for each message.
const WAIT: Duration = Duration::from_secs(20);

fn err(what: impl std::fmt::Display) -> CalibrationError {
    CalibrationError::Engine(format!("transport: {what}"))
}

fn config(key: u8, bootstrap: Vec<String>, max_bytes: usize) -> Result<NetConfig, CalibrationError> {
    let parse = |a: &str| a.parse().map_err(|e| err(format!("address {a}: {e}")));
    Ok(NetConfig {
        listen: vec![parse("/ip4/127.0.0.1/tcp/0")?],
        bootstrap: bootstrap.iter().map(|a| parse(a)).collect::<Result<_, _>>()?,
        names: ProtocolNames::for_chain(&Hash([0x7c; 32])),
        key_seed: [key; 32],
        max_message_bytes: max_bytes,
        max_connections: 4,
        event_buffer: 256,
        agent: "scalechain-calibration".into(),
        gossip: true,
        discover: false,
    })
}

/// The next event of `n` that `pick` takes, within [`WAIT`].
async fn next<T>(n: &mut Net, mut pick: impl FnMut(NetEvent) -> Option<T>) -> Result<T, CalibrationError> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        match tokio::time::timeout_at(deadline, n.events.recv()).await {
            Err(_) => return Err(err("timed out waiting for the other node")),
            Ok(None) => return Err(err("the network task ended")),
            Ok(Some(e)) => {
                if let Some(t) = pick(e) {
                    return Ok(t);
                }
            }
        }
    }
}

fn cpu_s() -> f64 {
    scalechain_procfs::threads_cpu_seconds("self")
}

/// CPU per byte of gossip on one side (sender or receiver), ns: `msgs` messages of `bytes`
/// bytes from one in-process node to another, the fastest of `reps` exchanges.
pub fn calibrate_transport(bytes: usize, msgs: usize, reps: usize) -> Result<f64, CalibrationError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CalibrationError::Thread(e.to_string()))?;
    let out = rt.block_on(exchange(bytes.max(1), msgs.max(1), reps.max(1)));
    drop(rt);
    out
}

async fn exchange(bytes: usize, msgs: usize, reps: usize) -> Result<f64, CalibrationError> {
    let max = bytes + 4_096;
    let mut a = net::start(config(1, Vec::new(), max)?).await.map_err(err)?;
    let addr = next(&mut a, |e| match e {
        NetEvent::Listening(addr) => Some(addr.to_string()),
        _ => None,
    })
    .await?;
    let mut b = net::start(config(2, vec![addr], max)?).await.map_err(err)?;
    next(&mut b, |e| matches!(e, NetEvent::Connected { .. }).then_some(())).await?;
    // Subscriptions travel after the connection: give them a heartbeat.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let mut best = f64::INFINITY;
    let mut seq = 0u64;
    for _ in 0..reps {
        // The two idle for a while: what they use without traffic.
        let (c0, w0) = (cpu_s(), Instant::now());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let idle_per_s = (cpu_s() - c0) / w0.elapsed().as_secs_f64();
        let (c1, w1) = (cpu_s(), Instant::now());
        for _ in 0..msgs {
            seq += 1;
            let mut data = vec![0u8; bytes];
            for (i, chunk) in data.chunks_mut(8).enumerate() {
                let v = (seq << 32 | i as u64).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
            a.commands.send(Command::Publish { topic: Topic::Txs, data }).await.map_err(err)?;
            let (id, source) = next(&mut b, |e| match e {
                NetEvent::Gossip { id, source, .. } => Some((id, source)),
                _ => None,
            })
            .await?;
            b.commands.send(Command::Validate { id, source, verdict: Verdict::Ignore }).await.map_err(err)?;
        }
        let busy = cpu_s() - c1 - idle_per_s * w1.elapsed().as_secs_f64();
        best = best.min(busy.max(0.0) * 1e9 / (msgs * bytes) as f64 / 2.0);
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transport_costs_something_per_byte() {
        let ns = calibrate_transport(64 * 1024, 16, 2).unwrap();
        assert!(ns > 0.0 && ns < 1_000.0, "{ns}");
    }
}
