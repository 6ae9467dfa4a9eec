//! Decoding the node's JSON: [`decode_json`], the one function every JSON answer of the API,
//! every server-sent event and every error body goes through, so a document that does not
//! parse is reported the same way wherever it came from — by the path of the first field that
//! does not (`results[3].txid: ...`).
//!
//! It depends on no other module of the crate: [`types`](crate::types) (the events' data),
//! [`ops`](crate::ops) (the operations' responses, which re-exports it as
//! `ops::decode_json`) and the client (error bodies) all call it. It must not grow
//! knowledge of a particular body: what a body is belongs to `types`, how it is asked for to
//! `ops`.

use serde::de::DeserializeOwned;

/// Decodes JSON, naming the path of the first field that does not parse (`results[3].txid`).
///
/// A document that parses is read once, directly; only one that does not is read again to
/// find the path (tracking it costs as much as the parse itself).
pub fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.into_inner().to_string()
        } else {
            format!("{path}: {}", e.into_inner())
        }
    })?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Outer {
        items: Vec<Inner>,
    }

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Inner {
        n: u32,
    }

    #[test]
    fn a_document_that_parses_is_returned_and_one_that_does_not_names_its_field() {
        let ok: Outer = decode_json(br#"{"items": [{"n": 1}, {"n": 2}]}"#).unwrap();
        assert_eq!(ok, Outer { items: vec![Inner { n: 1 }, Inner { n: 2 }] });
        let e = decode_json::<Outer>(br#"{"items": [{"n": 1}, {"n": "two"}]}"#).unwrap_err();
        assert!(e.starts_with("items[1].n: invalid type"), "{e}");
        // At the root there is no path to name: the parser's message alone.
        let e = decode_json::<Outer>(b"7").unwrap_err();
        assert!(e.starts_with("invalid type: integer `7`"), "{e}");
        assert!(decode_json::<Outer>(br#"{"items": []} x"#).is_err(), "trailing bytes");
    }
}
