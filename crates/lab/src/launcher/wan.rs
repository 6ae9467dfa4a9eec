//! Wide-area links emulated in user space (this machine's kernel has no `netem` qdisc): a
//! [`Relay`] listens on loopback and forwards every TCP connection to a target, holding each
//! byte for a one-way delay (plus optional jitter, never reordering) in each direction, within
//! an optional bandwidth. Put in front of a node's peer-to-peer port, it makes that link a WAN
//! link; nodes that do not discover peers themselves (`p2p.discover = false`) and dial each
//! other through relays form a network whose every link has its region pair's delay
//! ([`Regions`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// One direction's behaviour of an emulated link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    /// One-way delay.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `[0, jitter]` per chunk (bytes keep their order).
    pub jitter: Duration,
    /// Bytes per second, if capped.
    pub bytes_per_s: Option<u64>,
}

impl Link {
    /// A link with only a one-way delay.
    pub fn delay(delay: Duration) -> Link {
        Link { delay, jitter: Duration::ZERO, bytes_per_s: None }
    }
}

/// A running relay; it stops (and closes its connections) when dropped.
pub struct Relay {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    /// Starts a relay on `127.0.0.1` (an OS-chosen port) forwarding to `target` over `link`,
    /// on a thread of its own.
    pub fn start(target: SocketAddr, link: Link) -> std::io::Result<Relay> {
        Relay::start_on(std::net::IpAddr::from([127, 0, 0, 1]), target, link)
    }

    /// [`Relay::start`] listening on `ip` (e.g. the host's address on a bridge of network
    /// namespaces, which every namespace reaches).
    pub fn start_on(ip: std::net::IpAddr, target: SocketAddr, link: Link) -> std::io::Result<Relay> {
        let std_listener = std::net::TcpListener::bind(SocketAddr::new(ip, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
        let thread = std::thread::Builder::new().name(format!("relay-{}", addr.port())).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                let listener = match TcpListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let seed = Arc::new(std::sync::atomic::AtomicU64::new(u64::from(addr.port())));
                tokio::select! {
                    _ = stop_rx => {}
                    _ = accept_loop(listener, target, link, seed) => {}
                }
            });
        })?;
        ready_rx.recv().map_err(|_| std::io::Error::other("the relay thread ended at start"))??;
        Ok(Relay { addr, stop: Some(stop_tx), thread: Some(thread) })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    link: Link,
    seed: Arc<std::sync::atomic::AtomicU64>,
) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else { continue };
        let s = seed.fetch_add(0x9e37_79b9_7f4a_7c15, std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(async move {
            let Ok(outbound) = TcpStream::connect(target).await else { return };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let (ri, wi) = inbound.into_split();
            let (ro, wo) = outbound.into_split();
            // Both directions run until either side closes.
            tokio::select! {
                _ = pipe(ri, wo, link, s) => {}
                _ = pipe(ro, wi, link, s ^ 1) => {}
            }
        });
    }
}

/// Chunks in flight in one direction before the reader waits (back-pressure).
const IN_FLIGHT: usize = 4_096;

/// Forwards `from` to `to`, each chunk released at its arrival time plus the link's delay (and
/// jitter, never before the chunk before it), and no faster than its bandwidth.
async fn pipe<R, W>(mut from: R, mut to: W, link: Link, seed: u64)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin,
{
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(IN_FLIGHT);
    let reader = tokio::spawn(async move {
        let mut rng = seed | 1;
        let mut last = Instant::now();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let jitter = if link.jitter.is_zero() {
                Duration::ZERO
            } else {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                link.jitter.mul_f64((rng >> 11) as f64 / (1u64 << 53) as f64)
            };
            let due = (Instant::now() + link.delay + jitter).max(last);
            last = due;
            if tx.send((due, buf[..n].to_vec())).await.is_err() {
                return;
            }
        }
    });
    let mut free = Instant::now();
    while let Some((due, chunk)) = rx.recv().await {
        // A capped link has sent a chunk once its last byte has had its time on the wire.
        let wire = link
            .bytes_per_s
            .filter(|r| *r > 0)
            .map_or(Duration::ZERO, |rate| Duration::from_secs_f64(chunk.len() as f64 / rate as f64));
        let at = due.max(free) + wire;
        free = at;
        tokio::time::sleep_until(at).await;
        if to.write_all(&chunk).await.is_err() {
            break;
        }
    }
    reader.abort();
    let _ = to.shutdown().await;
}

/// Regions and the one-way delay between each pair (ms).
#[derive(Clone, Debug, PartialEq)]
pub struct Regions {
    /// The regions' names.
    pub names: Vec<String>,
    /// `one_way_ms[i][j]`: the one-way delay from region `i` to region `j`.
    pub one_way_ms: Vec<Vec<f64>>,
}

impl Regions {
    /// Seed 001's machines: Canada (where it sent from), the UK and India, with pings of
    /// about 200 ms (Canada–UK) and 350 ms (Canada–India) as one-way delays of half that; the
    /// UK–India ping, which seed 001 does not give, is taken as 120 ms; 1 ms within a region.
    pub fn seed_001() -> Regions {
        Regions {
            names: vec!["Canada".into(), "UK".into(), "India".into()],
            one_way_ms: vec![vec![1.0, 100.0, 175.0], vec![100.0, 1.0, 60.0], vec![175.0, 60.0, 1.0]],
        }
    }

    /// SimBlock's six regions (North America, Europe, South America, Asia Pacific, Japan,
    /// Australia) and its 2019 latency table, used as one-way delays.
    pub fn simblock() -> Regions {
        Regions {
            names: ["North America", "Europe", "South America", "Asia Pacific", "Japan", "Australia"]
                .map(String::from)
                .to_vec(),
            one_way_ms: vec![
                vec![32.0, 124.0, 184.0, 198.0, 151.0, 189.0],
                vec![124.0, 11.0, 227.0, 237.0, 252.0, 294.0],
                vec![184.0, 227.0, 88.0, 325.0, 301.0, 322.0],
                vec![198.0, 237.0, 325.0, 85.0, 58.0, 198.0],
                vec![151.0, 252.0, 301.0, 58.0, 12.0, 126.0],
                vec![189.0, 294.0, 322.0, 198.0, 126.0, 16.0],
            ],
        }
    }

    /// The region of node `i` of a network: round robin.
    pub fn of_node(&self, i: usize) -> usize {
        i % self.names.len().max(1)
    }

    /// The one-way delay between nodes `i` and `j` (their regions' pair).
    pub fn delay(&self, i: usize, j: usize) -> Duration {
        let (a, b) = (self.of_node(i), self.of_node(j));
        let ms = self.one_way_ms.get(a).and_then(|r| r.get(b)).copied().unwrap_or(0.0);
        Duration::from_secs_f64(ms.max(0.0) / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A TCP echo server on loopback; its address.
    fn echo() -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    /// Median round trip of a 64-byte message through `relay`.
    fn rtt(relay: &Relay) -> Duration {
        let mut s = std::net::TcpStream::connect(relay.addr()).unwrap();
        s.set_nodelay(true).unwrap();
        let mut times = Vec::new();
        for _ in 0..7 {
            let t = std::time::Instant::now();
            s.write_all(&[7u8; 64]).unwrap();
            let mut got = [0u8; 64];
            s.read_exact(&mut got).unwrap();
            assert_eq!(got, [7u8; 64]);
            times.push(t.elapsed());
        }
        times.sort();
        times[3]
    }

    #[test]
    fn a_relay_holds_each_direction_for_its_delay_within_ten_percent() {
        let target = echo();
        for ms in [40u64, 100] {
            let relay = Relay::start(target, Link::delay(Duration::from_millis(ms))).unwrap();
            let measured = rtt(&relay).as_secs_f64() * 1e3;
            let want = 2.0 * ms as f64;
            assert!(
                (measured - want).abs() <= 0.1 * want,
                "round trip {measured:.1} ms for a one-way {ms} ms"
            );
        }
    }

    #[test]
    fn jitter_keeps_order_and_a_bandwidth_cap_paces_bytes() {
        let target = echo();
        let link =
            Link { delay: Duration::from_millis(5), jitter: Duration::from_millis(20), bytes_per_s: None };
        let relay = Relay::start(target, link).unwrap();
        let mut s = std::net::TcpStream::connect(relay.addr()).unwrap();
        let sent: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        for c in sent.chunks(500) {
            s.write_all(c).unwrap();
        }
        let mut got = vec![0u8; sent.len()];
        s.read_exact(&mut got).unwrap();
        assert_eq!(got, sent, "bytes arrive in order");
        // 100 KB at 200 KB/s takes at least half a second.
        let capped = Link { delay: Duration::ZERO, jitter: Duration::ZERO, bytes_per_s: Some(200_000) };
        let relay = Relay::start(target, capped).unwrap();
        let mut s = std::net::TcpStream::connect(relay.addr()).unwrap();
        let t = std::time::Instant::now();
        let block = vec![1u8; 100_000];
        let reader = {
            let mut r = s.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut got = vec![0u8; 100_000];
                r.read_exact(&mut got).unwrap();
            })
        };
        s.write_all(&block).unwrap();
        reader.join().unwrap();
        let took = t.elapsed().as_secs_f64();
        assert!(took >= 0.4, "100 KB through a 200 KB/s link took {took:.2} s");
    }

    #[test]
    fn region_matrices_are_square_and_symmetric() {
        for r in [Regions::seed_001(), Regions::simblock()] {
            let n = r.names.len();
            assert!(r.one_way_ms.iter().all(|row| row.len() == n));
            for i in 0..n {
                for j in 0..n {
                    assert_eq!(r.one_way_ms[i][j], r.one_way_ms[j][i]);
                }
            }
        }
        let s = Regions::seed_001();
        assert_eq!(s.delay(0, 1), Duration::from_millis(100));
        assert_eq!(s.delay(3, 2), Duration::from_millis(175), "node 3 is in region 0 again");
    }
}
