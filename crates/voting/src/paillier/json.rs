//! Keys and ciphertexts in the JSON form python-paillier (`phe`) documents, so that a tally can
//! be checked with `phe`:
//!
//! - public key: `{"g": "<N+1>", "n": "<N>"}` (`phe.PaillierPublicKey(n=int(n))`; `g` must be
//!   `N + 1`, the only generator phe uses);
//! - private key: `{"public_key": {…}, "p": "<p>", "q": "<q>"}`
//!   (`phe.PaillierPrivateKey(public_key, int(p), int(q))`);
//! - ciphertexts: `{"public_key": {…}, "values": [["<c>", 0], …]}`, each an
//!   `phe.EncryptedNumber(public_key, int(c), exponent)`. Ballots are integers, so the exponent is
//!   always 0 (phe would rescale mixed exponents by `16^Δ`, which would corrupt the `2^(i·b)`
//!   layout): any other exponent is refused.
//!
//! Numbers are decimal strings (JSON numbers cannot hold 2048-bit integers portably). Parsing
//! bounds every string before converting it.

use openssl::bn::{BigNum, BigNumRef};
use serde_json::{json, Value};

use super::{Ciphertext, PublicKey, SecretKey};
use crate::VoteError;

/// Longest decimal string accepted: enough for a number below `2^(2·MAX_MODULUS_BITS)`.
const MAX_DIGITS: usize = 2 * super::MAX_MODULUS_BITS * 30103 / 100_000 + 2;

fn bad(msg: impl Into<String>) -> VoteError {
    VoteError::BadKey(format!("phe json: {}", msg.into()))
}

fn dec(x: &BigNumRef) -> Result<String, VoteError> {
    Ok(x.to_dec_str()?.to_string())
}

/// A non-negative decimal string, bounded, without sign or leading zeros (a single `0` allowed).
fn parse_dec(v: &Value, what: &str) -> Result<BigNum, VoteError> {
    let s = v.as_str().ok_or_else(|| bad(format!("{what} is not a decimal string")))?;
    if s.is_empty() || s.len() > MAX_DIGITS || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!("{what} is not a decimal number of at most {MAX_DIGITS} digits")));
    }
    if s.len() > 1 && s.starts_with('0') {
        return Err(bad(format!("{what} has leading zeros")));
    }
    Ok(BigNum::from_dec_str(s)?)
}

fn parse(text: &str) -> Result<Value, VoteError> {
    serde_json::from_str(text).map_err(|e| bad(e.to_string()))
}

fn public_value(pk: &PublicKey) -> Result<Value, VoteError> {
    let mut g = BigNum::from_slice(&pk.to_bytes())?;
    g.add_word(1)?;
    Ok(json!({ "g": dec(&g)?, "n": dec(pk.n())? }))
}

fn public_from(v: &Value) -> Result<PublicKey, VoteError> {
    let n = parse_dec(v.get("n").ok_or_else(|| bad("no n"))?, "n")?;
    let pk = PublicKey::new(n)?;
    if let Some(g) = v.get("g") {
        let g = parse_dec(g, "g")?;
        let mut expected = BigNum::from_slice(&pk.to_bytes())?;
        expected.add_word(1)?;
        if g != expected {
            return Err(bad("g is not n + 1"));
        }
    }
    Ok(pk)
}

impl PublicKey {
    /// `{"g": "<N+1>", "n": "<N>"}`.
    pub fn to_phe_json(&self) -> Result<String, VoteError> {
        Ok(public_value(self)?.to_string())
    }

    /// Parses [`PublicKey::to_phe_json`]'s form (`g`, if present, must be `N + 1`).
    pub fn from_phe_json(text: &str) -> Result<PublicKey, VoteError> {
        public_from(&parse(text)?)
    }
}

impl SecretKey {
    /// `{"public_key": {…}, "p": "<p>", "q": "<q>"}`.
    pub fn to_phe_json(&self) -> Result<String, VoteError> {
        let (p, q) = self.primes();
        Ok(json!({ "public_key": public_value(self.public())?, "p": dec(p)?, "q": dec(q)? }).to_string())
    }

    /// Parses [`SecretKey::to_phe_json`]'s form; the primes must give the public key's `N`.
    pub fn from_phe_json(text: &str) -> Result<SecretKey, VoteError> {
        let v = parse(text)?;
        let pk = public_from(v.get("public_key").ok_or_else(|| bad("no public_key"))?)?;
        let p = parse_dec(v.get("p").ok_or_else(|| bad("no p"))?, "p")?;
        let q = parse_dec(v.get("q").ok_or_else(|| bad("no q"))?, "q")?;
        let sk = SecretKey::from_primes(p, q)?;
        if *sk.public() != pk {
            return Err(bad("p·q is not n"));
        }
        Ok(sk)
    }
}

/// `{"public_key": {…}, "values": [["<c>", 0], …]}`.
pub fn ciphertexts_to_json(pk: &PublicKey, cts: &[Ciphertext]) -> Result<String, VoteError> {
    let values: Vec<Value> =
        cts.iter().map(|c| Ok(json!([dec(&c.0)?, 0]))).collect::<Result<_, VoteError>>()?;
    Ok(json!({ "public_key": public_value(pk)?, "values": values }).to_string())
}

/// Parses [`ciphertexts_to_json`]'s form: every exponent 0 and every ciphertext in `Z*_{N²}`.
pub fn ciphertexts_from_json(text: &str) -> Result<(PublicKey, Vec<Ciphertext>), VoteError> {
    let v = parse(text)?;
    let pk = public_from(v.get("public_key").ok_or_else(|| bad("no public_key"))?)?;
    let values = v.get("values").and_then(Value::as_array).ok_or_else(|| bad("no values array"))?;
    let mut cts = Vec::with_capacity(values.len());
    for (i, item) in values.iter().enumerate() {
        let pair = item
            .as_array()
            .filter(|a| a.len() == 2)
            .ok_or_else(|| bad(format!("value {i} is not a pair")))?;
        if pair[1].as_i64() != Some(0) {
            return Err(bad(format!("value {i} has exponent {}, not 0", pair[1])));
        }
        let c = parse_dec(&pair[0], "ciphertext")?;
        pk.check_ciphertext(&c)?;
        cts.push(Ciphertext(c));
    }
    Ok((pk, cts))
}

#[cfg(test)]
mod tests {
    use super::super::keygen;
    use super::*;
    use proptest::prelude::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn keys_and_ciphertexts_round_trip() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let sk = keygen(512, &mut rng).unwrap();
        let pk = sk.public();
        assert_eq!(&PublicKey::from_phe_json(&pk.to_phe_json().unwrap()).unwrap(), pk);
        let back = SecretKey::from_phe_json(&sk.to_phe_json().unwrap()).unwrap();
        assert_eq!(back.public(), pk);
        let m = BigNum::from_u32(77).unwrap();
        let cts: Vec<Ciphertext> = (0..3).map(|_| pk.encrypt(&m, &mut rng).unwrap().0).collect();
        let text = ciphertexts_to_json(pk, &cts).unwrap();
        let (pk2, cts2) = ciphertexts_from_json(&text).unwrap();
        assert_eq!((&pk2, &cts2), (pk, &cts));
        assert_eq!(back.decrypt(&cts2[1]).unwrap(), m);
        // Refused: another exponent, another g, a non-unit, junk numbers.
        let n = dec(pk.n()).unwrap();
        let other_exp = text.replacen(",0]", ",-1]", 1);
        assert!(ciphertexts_from_json(&other_exp).is_err());
        assert!(PublicKey::from_phe_json(&format!("{{\"n\":\"{n}\",\"g\":\"2\"}}")).is_err());
        let zero = format!("{{\"public_key\":{{\"n\":\"{n}\"}},\"values\":[[\"{n}\",0]]}}");
        assert_eq!(ciphertexts_from_json(&zero).unwrap_err(), VoteError::CiphertextNotUnit);
        for junk in ["-5", "+5", "05", "", "1e9", "12a"] {
            assert!(PublicKey::from_phe_json(&format!("{{\"n\":\"{junk}\"}}")).is_err(), "{junk}");
        }
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_json_never_panics(s in "\\PC{0,200}") {
            let _ = PublicKey::from_phe_json(&s);
            let _ = SecretKey::from_phe_json(&s);
            let _ = ciphertexts_from_json(&s);
        }

        #[test]
        fn parsing_arbitrary_numbers_never_panics(digits in "[0-9]{0,700}") {
            let _ = PublicKey::from_phe_json(&format!("{{\"n\":\"{digits}\"}}"));
        }
    }
}
