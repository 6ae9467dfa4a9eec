//! Who is on the virtual network and what travels between them: node ids and the messages
//! links carry. The network (`crate::world`), the nodes (`crate::node`) and the events
//! (`crate::event`) all speak of these; this file refers to none of them.

use std::sync::Arc;

use scalechain_p2p::msg::MsgId;
use scalechain_p2p::msg::Topic;

/// A node's identity on the virtual network.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl std::fmt::Debug for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "n{}", self.0)
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// What travels on a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    /// A gossip message.
    Gossip {
        /// The topic.
        topic: Topic,
        /// Its id.
        id: MsgId,
        /// The payload, shared by every copy of the message (a node's forwards and the
        /// messages in flight hold the same bytes).
        data: Arc<[u8]>,
    },
    /// A sync request, with the requester's tag.
    Request {
        /// The requester's tag for the answer.
        tag: u64,
        /// The request body.
        data: Vec<u8>,
    },
    /// The answer to the request with this tag.
    Response {
        /// The requester's tag.
        tag: u64,
        /// The response body.
        data: Vec<u8>,
    },
}

impl Wire {
    /// Bytes of its payload or body.
    pub fn len(&self) -> usize {
        match self {
            Wire::Gossip { data, .. } => data.len(),
            Wire::Request { data, .. } | Wire::Response { data, .. } => data.len(),
        }
    }

    /// True for an empty payload or body.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
