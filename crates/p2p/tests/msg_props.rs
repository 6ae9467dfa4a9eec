//! Property tests of the wire messages: decoding arbitrary bytes never panics, and what
//! decodes re-encodes to the same bytes (one encoding per message).
use proptest::prelude::*;
use scalechain_p2p::msg::{Request, Response, TxBatch};
use scalechain_types::codec::{Decode, Encode};

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_decoded_messages_are_canonical(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(r) = Request::decode(&bytes) {
            prop_assert_eq!(r.encode(), bytes.clone());
        }
        if let Ok(r) = Response::decode(&bytes) {
            prop_assert_eq!(r.encode(), bytes.clone());
        }
        if let Ok(b) = TxBatch::decode(&bytes) {
            prop_assert_eq!(b.encode(), bytes.clone());
        }
    }

    #[test]
    fn get_headers_round_trips(n in 0usize..64, max in any::<u32>(), seed in any::<u8>()) {
        let locator = (0..n).map(|i| scalechain_types::Hash([seed.wrapping_add(i as u8); 32])).collect();
        let r = Request::GetHeaders { locator, max };
        prop_assert_eq!(Request::decode(&r.encode()).ok(), Some(r));
    }
}
