//! Dialling from the listen port, and from a new port when the listen port cannot be bound.
//!
//! libp2p's TCP transport dials from the port it listens on ([`PortUse::Reuse`], the default),
//! so a peer that accepts the connection sees the address it can dial back. It binds the dial
//! socket to the unspecified address with that port (`0.0.0.0:P`), and the kernel refuses that
//! bind (`EADDRINUSE`) while any socket of another owner holds port `P` on some local address —
//! a live one, or one in TIME_WAIT after a connection from another program (a listen port chosen
//! by the OS is in the ephemeral range every outgoing connection draws from). The transport does
//! not fall back, and every dial fails until that socket is gone: a node listening on
//! 127.0.0.1:P could not reach any peer for the 60 s a TIME_WAIT on 127.0.0.2:P lasts.
//! [`PortUse::Reuse`] is documented as best effort; [`ReuseOrNew`] makes it so: a dial that fails
//! with `AddrInUse` is made again from a new port.
//!
//! Must not: fall back for any other error (a refused or unreachable peer is the dial's
//! answer), or dial twice when the first dial works.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use futures::FutureExt;
use libp2p::core::transport::{DialOpts, ListenerId, PortUse, Transport, TransportError, TransportEvent};
use libp2p::Multiaddr;

/// A transport whose dials from the listen port fall back to a new port when that port cannot
/// be bound.
pub struct ReuseOrNew<T> {
    inner: Arc<Mutex<T>>,
}

impl<T> ReuseOrNew<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> ReuseOrNew<T> {
        ReuseOrNew { inner: Arc::new(Mutex::new(inner)) }
    }
}

/// Locks `m`; the transport holds no invariant a panic elsewhere could leave half-done.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> Transport for ReuseOrNew<T>
where
    T: Transport<Error = io::Error> + Unpin + Send + 'static,
    T::Dial: Send + 'static,
    T::Output: Send + 'static,
{
    type Output = T::Output;
    type Error = io::Error;
    type ListenerUpgrade = T::ListenerUpgrade;
    type Dial = BoxFuture<'static, io::Result<T::Output>>;

    fn listen_on(&mut self, id: ListenerId, addr: Multiaddr) -> Result<(), TransportError<io::Error>> {
        lock(&self.inner).listen_on(id, addr)
    }

    fn remove_listener(&mut self, id: ListenerId) -> bool {
        lock(&self.inner).remove_listener(id)
    }

    fn dial(&mut self, addr: Multiaddr, opts: DialOpts) -> Result<Self::Dial, TransportError<io::Error>> {
        let first = lock(&self.inner).dial(addr.clone(), opts)?;
        if opts.port_use != PortUse::Reuse {
            return Ok(first.boxed());
        }
        let inner = self.inner.clone();
        Ok(async move {
            match first.await {
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                    tracing::debug!(
                        "the listen port is taken for dialling {addr} ({e}): dialling from a new port"
                    );
                    let again = lock(&inner).dial(addr, DialOpts { port_use: PortUse::New, ..opts });
                    match again {
                        Ok(dial) => dial.await,
                        Err(TransportError::Other(e)) => Err(e),
                        Err(TransportError::MultiaddrNotSupported(a)) => {
                            Err(io::Error::other(format!("{a} is not a TCP address")))
                        }
                    }
                }
                other => other,
            }
        }
        .boxed())
    }

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<TransportEvent<Self::ListenerUpgrade, io::Error>> {
        Pin::new(&mut *lock(&self.inner)).poll(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use futures::future::poll_fn;
    use libp2p::core::Endpoint;
    use libp2p::tcp;

    /// Listens on 127.0.0.1 with any port; the port.
    async fn listening<T: Transport + Unpin>(t: &mut T) -> u16 {
        t.listen_on(ListenerId::next(), "/ip4/127.0.0.1/tcp/0".parse().unwrap()).map_err(|_| ()).unwrap();
        loop {
            if let TransportEvent::NewAddress { listen_addr, .. } =
                poll_fn(|cx| Pin::new(&mut *t).poll(cx)).await
            {
                let port = listen_addr.iter().find_map(|p| match p {
                    libp2p::multiaddr::Protocol::Tcp(port) => Some(port),
                    _ => None,
                });
                return port.unwrap();
            }
        }
    }

    /// A dial from the listen port, with a socket of another owner holding that port on
    /// 127.0.0.2: the transport alone fails with `AddrInUse`, the wrapped one connects from a
    /// new port.
    #[tokio::test]
    async fn a_dial_whose_listen_port_is_taken_elsewhere_comes_from_a_new_port() {
        let target = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let to: Multiaddr =
            format!("/ip4/127.0.0.1/tcp/{}", target.local_addr().unwrap().port()).parse().unwrap();
        let opts = DialOpts { role: Endpoint::Dialer, port_use: PortUse::Reuse };
        let config = || tcp::Config::default().nodelay(true);

        let mut plain = tcp::tokio::Transport::new(config());
        let port = listening(&mut plain).await;
        let holder = std::net::TcpListener::bind(("127.0.0.2", port)).unwrap();
        let err = plain.dial(to.clone(), opts).map_err(|_| ()).unwrap().await.err().unwrap();
        assert_eq!(
            err.kind(),
            io::ErrorKind::AddrInUse,
            "the premise: libp2p's transport does not fall back"
        );
        drop((plain, holder));

        let mut wrapped = ReuseOrNew::new(tcp::tokio::Transport::new(config()));
        let port = listening(&mut wrapped).await;
        let _holder = std::net::TcpListener::bind(("127.0.0.2", port)).unwrap();
        let stream = wrapped.dial(to, opts).map_err(|_| ()).unwrap().await.unwrap();
        let (_, from) = target.accept().await.unwrap();
        assert_eq!(stream.0.local_addr().unwrap(), from, "connected, from a new port");
        assert_ne!(from.port(), port);
        // (That a dial comes from the listen port when it is free is not asserted: in a test
        // run, another test's socket may hold the port at that moment — the case above.)
    }
}
