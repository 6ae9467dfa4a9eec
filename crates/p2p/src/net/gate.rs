//! A libp2p behaviour that limits inbound connections per IP address: those still being set
//! up (TCP accepted, noise and yamux not done) and those established. One address cannot fill
//! the node's connection slots with sockets it never uses, so newcomers from elsewhere still
//! get in; the transport's time-out closes what is never set up.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::task::{Context, Poll};

use libp2p::core::transport::PortUse;
use libp2p::core::Endpoint;
use libp2p::multiaddr::Protocol;
use libp2p::swarm::{
    dummy, ConnectionClosed, ConnectionDenied, ConnectionId, FromSwarm, ListenFailure, NetworkBehaviour,
    THandler, THandlerInEvent, THandlerOutEvent, ToSwarm,
};
use libp2p::{Multiaddr, PeerId};

/// The IP address of a multiaddr, if it has one.
pub fn ip_of(addr: &Multiaddr) -> Option<IpAddr> {
    addr.iter().find_map(|p| match p {
        Protocol::Ip4(a) => Some(IpAddr::V4(a)),
        Protocol::Ip6(a) => Some(IpAddr::V6(a)),
        _ => None,
    })
}

/// Why a connection was refused.
#[derive(Debug)]
pub struct TooManyFromIp {
    ip: IpAddr,
    limit: usize,
    what: &'static str,
}

impl std::fmt::Display for TooManyFromIp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} already has {} {} connections", self.ip, self.limit, self.what)
    }
}

impl std::error::Error for TooManyFromIp {}

/// Per-IP limits on inbound connections (see the module documentation).
pub struct Gate {
    max_pending: usize,
    max_established: usize,
    pending: HashMap<ConnectionId, IpAddr>,
    pending_per_ip: HashMap<IpAddr, usize>,
    established: HashMap<ConnectionId, IpAddr>,
    established_per_ip: HashMap<IpAddr, usize>,
}

fn dec(map: &mut HashMap<IpAddr, usize>, ip: IpAddr) {
    if let Some(n) = map.get_mut(&ip) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(&ip);
        }
    }
}

impl Gate {
    /// At most `max_pending` connections being set up and `max_established` established
    /// inbound connections per IP address.
    pub fn new(max_pending: usize, max_established: usize) -> Gate {
        Gate {
            max_pending,
            max_established,
            pending: HashMap::new(),
            pending_per_ip: HashMap::new(),
            established: HashMap::new(),
            established_per_ip: HashMap::new(),
        }
    }

    fn forget_pending(&mut self, id: &ConnectionId) {
        if let Some(ip) = self.pending.remove(id) {
            dec(&mut self.pending_per_ip, ip);
        }
    }
}

impl NetworkBehaviour for Gate {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Infallible;

    fn handle_pending_inbound_connection(
        &mut self,
        id: ConnectionId,
        _local: &Multiaddr,
        remote: &Multiaddr,
    ) -> Result<(), ConnectionDenied> {
        let Some(ip) = ip_of(remote) else { return Ok(()) };
        let n = self.pending_per_ip.get(&ip).copied().unwrap_or(0);
        if n >= self.max_pending {
            return Err(ConnectionDenied::new(TooManyFromIp {
                ip,
                limit: self.max_pending,
                what: "pending",
            }));
        }
        *self.pending_per_ip.entry(ip).or_insert(0) += 1;
        self.pending.insert(id, ip);
        Ok(())
    }

    fn handle_established_inbound_connection(
        &mut self,
        id: ConnectionId,
        _peer: PeerId,
        _local: &Multiaddr,
        remote: &Multiaddr,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        self.forget_pending(&id);
        if let Some(ip) = ip_of(remote) {
            let n = self.established_per_ip.get(&ip).copied().unwrap_or(0);
            if n >= self.max_established {
                return Err(ConnectionDenied::new(TooManyFromIp {
                    ip,
                    limit: self.max_established,
                    what: "established inbound",
                }));
            }
        }
        Ok(dummy::ConnectionHandler)
    }

    fn handle_established_outbound_connection(
        &mut self,
        _id: ConnectionId,
        _peer: PeerId,
        _addr: &Multiaddr,
        _role: Endpoint,
        _port_use: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn on_swarm_event(&mut self, event: FromSwarm) {
        match event {
            FromSwarm::ConnectionEstablished(e) => {
                if let libp2p::core::ConnectedPoint::Listener { send_back_addr, .. } = e.endpoint {
                    if let Some(ip) = ip_of(send_back_addr) {
                        *self.established_per_ip.entry(ip).or_insert(0) += 1;
                        self.established.insert(e.connection_id, ip);
                    }
                }
            }
            FromSwarm::ConnectionClosed(ConnectionClosed { connection_id, .. }) => {
                if let Some(ip) = self.established.remove(&connection_id) {
                    dec(&mut self.established_per_ip, ip);
                }
            }
            FromSwarm::ListenFailure(ListenFailure { connection_id, .. }) => {
                self.forget_pending(&connection_id)
            }
            _ => {}
        }
    }

    fn on_connection_handler_event(
        &mut self,
        _peer: PeerId,
        _id: ConnectionId,
        event: THandlerOutEvent<Self>,
    ) {
        match event {}
    }

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn addr(ip: &str) -> Multiaddr {
        format!("/ip4/{ip}/tcp/1234").parse().unwrap()
    }

    #[test]
    fn pending_connections_are_limited_per_address_and_freed_when_they_fail() {
        let mut g = Gate::new(2, 1);
        let local = addr("127.0.0.1");
        let ids: Vec<ConnectionId> = (0..4).map(ConnectionId::new_unchecked).collect();
        assert!(g.handle_pending_inbound_connection(ids[0], &local, &addr("10.0.0.1")).is_ok());
        assert!(g.handle_pending_inbound_connection(ids[1], &local, &addr("10.0.0.1")).is_ok());
        let e = g.handle_pending_inbound_connection(ids[2], &local, &addr("10.0.0.1")).unwrap_err();
        let why = e.downcast_ref::<TooManyFromIp>().unwrap().to_string();
        assert_eq!(why, "10.0.0.1 already has 2 pending connections");
        // Another address is not affected.
        assert!(g.handle_pending_inbound_connection(ids[3], &local, &addr("10.0.0.2")).is_ok());
        // One of the first two times out: room again.
        let err = libp2p::swarm::ListenError::Aborted;
        g.on_swarm_event(FromSwarm::ListenFailure(ListenFailure {
            local_addr: &local,
            send_back_addr: &addr("10.0.0.1"),
            error: &err,
            connection_id: ids[0],
            peer_id: None,
        }));
        assert!(g.handle_pending_inbound_connection(ids[2], &local, &addr("10.0.0.1")).is_ok());
        // Established: one per address here; the pending count drops as it is set up.
        let peer = PeerId::random();
        assert!(g.handle_established_inbound_connection(ids[1], peer, &local, &addr("10.0.0.1")).is_ok());
        assert_eq!(g.pending_per_ip.get(&ip_of(&addr("10.0.0.1")).unwrap()), Some(&1));
    }
}
