//! One verification round's verdicts as the protocol machine's [`Input::TxsDone`] round: the
//! one mapping both reactors use (the node's pipeline, in `scalechain-node`, and the
//! simulator, `scalechain-simnet`), so the machine is stepped with the same round by either.
//!
//! [`Replica::admit_batches`] gives one [`BatchOutcome`] per batch, with one verdict per
//! transaction in the batch's order, and the orphans the round released. A [`TxsRound`] takes
//! the outcomes one by one, each with where its batch came from ([`TxOrigin`]), then the
//! released orphans, and makes the round:
//!
//! - a batch from a peer (a gossip message, or a page of its mempool) becomes one [`TxsDone`]
//!   of its own, in the order the batches were pushed, carrying what the mempool took, whether
//!   a transaction broke a consensus rule (`invalid`: the sender is penalised, the gossip
//!   message rejected) and how many were refused for want of room (`crowded`: the machine
//!   fetches its peers' mempools again after the next block);
//! - the local batches (the API's) become one relay after the peers' batches, their admitted
//!   transactions in the order pushed, so what one round admitted from the API is published in
//!   as few messages as the limits allow; the API's callers learn the verdicts from
//!   [`TxsRound::push`] instead;
//! - the released orphans come last, as one relay ([`TxOrigin::Released`]).
//!
//! Invariants: every batch pushed is answered exactly once — a peer's by its own entry, even
//! when nothing in it was admitted (gossipsub waits for a verdict on every message), a local one
//! through the relay and the verdicts handed back; every admitted transaction appears in exactly
//! one entry, in its batch's order; a relay with nothing in it is left out (a round with no
//! entry at all is empty, and the caller need not step the machine).
//!
//! Must not: judge anything (the verdicts are admission's: this only moves them), touch the
//! mempool or the chain, or reorder transactions.
//!
//! [`Input::TxsDone`]: scalechain_p2p::protocol::Input::TxsDone
//! [`Replica::admit_batches`]: crate::Replica::admit_batches

use std::sync::Arc;

use scalechain_mempool::TxVerdict;
use scalechain_p2p::protocol::{TxOrigin, TxsDone};
use scalechain_types::{Hash, Tx};

use crate::BatchOutcome;

/// The machine's round of one verification round, built batch by batch (see the module
/// documentation); `K` is the reactor's peer key.
#[derive(Debug)]
pub struct TxsRound<K> {
    /// The peers' batches' entries, in the order pushed.
    done: Vec<TxsDone<K>>,
    /// What the local batches admitted, in the order pushed.
    local: Vec<Arc<Tx>>,
}

impl<K> Default for TxsRound<K> {
    fn default() -> Self {
        TxsRound { done: Vec::new(), local: Vec::new() }
    }
}

impl<K> TxsRound<K> {
    /// An empty round with room for `batches` entries.
    pub fn with_capacity(batches: usize) -> TxsRound<K> {
        TxsRound { done: Vec::with_capacity(batches), local: Vec::new() }
    }

    /// Adds one batch's outcome, from `origin`: a local one (`TxOrigin::Local`) joins the
    /// relay, any other (a peer's) becomes its own entry. Hands back the batch's txids and verdicts, both in
    /// the batch's order, for a caller that answers a submitter (the API); others drop them.
    pub fn push(&mut self, origin: TxOrigin<K>, batch: BatchOutcome) -> (Vec<Hash>, Vec<TxVerdict>) {
        let crowded = batch.crowded();
        let BatchOutcome { verdicts, txids, admitted, invalid } = batch;
        match origin {
            TxOrigin::Local => self.local.extend(admitted),
            origin => self.done.push(TxsDone { origin, admitted, invalid, crowded }),
        }
        (txids, verdicts)
    }

    /// The round: the peers' entries in the order pushed, then the local batches' relay, then
    /// the `released` orphans' relay (each left out if empty).
    pub fn finish(self, released: Vec<Arc<Tx>>) -> Vec<TxsDone<K>> {
        let TxsRound { mut done, local } = self;
        if !local.is_empty() {
            done.push(TxsDone::relay(TxOrigin::Local, local));
        }
        if !released.is_empty() {
            done.push(TxsDone::relay(TxOrigin::Released, released));
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_mempool::{Admitted, HeldOrphan, MempoolError};
    use scalechain_p2p::msg::MsgId;
    use scalechain_types::{Amount, OutPoint, TxKind};

    /// A distinct transaction per `n`.
    fn tx(n: u8) -> Arc<Tx> {
        Arc::new(Tx { version: 1, kind: TxKind::TRANSFER, inputs: vec![], outputs: vec![], data: vec![n] })
    }

    fn admitted(n: u8) -> TxVerdict {
        TxVerdict::Admitted(Admitted {
            tx: tx(n),
            txid: Hash([n; 32]),
            wtxid: Hash([n; 32]),
            fee: Amount::ZERO,
            size: 1,
            evicted: vec![],
        })
    }

    fn crowded_out() -> TxVerdict {
        TxVerdict::Refused(MempoolError::PoolFull { rate: 1, lowest: 2 })
    }

    fn known(n: u8) -> TxVerdict {
        TxVerdict::Refused(MempoolError::AlreadyKnown { txid: Hash([n; 32]) })
    }

    fn orphan(n: u8) -> TxVerdict {
        let prev = OutPoint { txid: Hash([0xee; 32]), index: 0 };
        TxVerdict::Orphan(HeldOrphan {
            txid: Hash([n; 32]),
            input: 0,
            prev,
            parents: vec![],
            evicted: vec![],
        })
    }

    /// A batch of transactions numbered from `first`, with these verdicts; what the verdicts
    /// admitted is `admitted`, as `Replica::admit_batches` fills it.
    fn batch(first: u8, verdicts: Vec<TxVerdict>, invalid: bool) -> BatchOutcome {
        let txids = (first..).take(verdicts.len()).map(|n| Hash([n; 32])).collect();
        let admitted = verdicts
            .iter()
            .filter_map(|v| match v {
                TxVerdict::Admitted(a) => Some(a.tx.clone()),
                _ => None,
            })
            .collect();
        BatchOutcome { verdicts, txids, admitted, invalid }
    }

    fn gossip(peer: u32, id: u8) -> TxOrigin<u32> {
        TxOrigin::Gossip { source: peer, id: MsgId([id; 20]) }
    }

    #[test]
    fn peers_batches_answered_each_in_order_then_the_api_relay_then_the_released() {
        let mut round = TxsRound::with_capacity(5);
        // A gossip message: one admitted, one crowded out, one already known.
        round.push(gossip(7, 1), batch(1, vec![admitted(1), crowded_out(), known(3)], false));
        // The API: two admitted around a refusal; its verdicts come back, in order.
        let back = round.push(TxOrigin::Local, batch(4, vec![admitted(4), known(5), admitted(6)], false));
        assert_eq!(back, ((4..7).map(|n| Hash([n; 32])).collect(), vec![admitted(4), known(5), admitted(6)]));
        // A gossip message with nothing admitted (an orphan held): still answered.
        round.push(gossip(8, 2), batch(7, vec![orphan(7)], false));
        // A page of a peer's mempool with an invalid transaction.
        round.push(TxOrigin::Pool(9), batch(8, vec![known(8), admitted(9)], true));
        // A second API batch joins the first one's relay, after it.
        round.push(TxOrigin::Local, batch(10, vec![admitted(10)], false));
        let released = vec![tx(20), tx(21)];
        let done = round.finish(released.clone());
        assert_eq!(
            done,
            vec![
                TxsDone { origin: gossip(7, 1), admitted: vec![tx(1)], invalid: false, crowded: 1 },
                TxsDone { origin: gossip(8, 2), admitted: vec![], invalid: false, crowded: 0 },
                TxsDone { origin: TxOrigin::Pool(9), admitted: vec![tx(9)], invalid: true, crowded: 0 },
                TxsDone::relay(TxOrigin::Local, vec![tx(4), tx(6), tx(10)]),
                TxsDone::relay(TxOrigin::Released, released),
            ]
        );
    }

    #[test]
    fn empty_relays_are_left_out_and_an_empty_round_is_empty() {
        let mut round = TxsRound::default();
        // The API's batch admitted nothing: no relay, but its verdict comes back.
        let back = round.push(TxOrigin::Local, batch(1, vec![known(1)], false));
        assert_eq!(back, (vec![Hash([1; 32])], vec![known(1)]));
        assert_eq!(round.finish(vec![]), Vec::<TxsDone<u32>>::new());
        let mut round = TxsRound::default();
        round.push(gossip(1, 1), batch(1, vec![], false));
        assert_eq!(
            round.finish(vec![]),
            vec![TxsDone { origin: gossip(1, 1), admitted: vec![], invalid: false, crowded: 0 }]
        );
    }
}
