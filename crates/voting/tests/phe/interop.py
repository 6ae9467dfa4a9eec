#!/usr/bin/env python3
"""python-paillier (phe) side of the interoperability test (crates/voting/tests/phe_interop.rs).

Usage:
  interop.py check-tally IN.json OUT.json
      IN: {"private_key": {"public_key": {"n", "g"}, "p", "q"},
           "ballots": {"public_key": {...}, "values": [["<c>", 0], ...]},
           "tally": ["<c>", 0], "plaintext": "<m>", "r": "<r>"}
      phe adds the ballots with `+`, decrypts our tally with the private key, and checks the
      decryption proof (raw_encrypt(m, r_value=r) == tally).
      OUT: {"sum_equals_tally": bool, "plaintext": "<m>", "proof_ok": bool}
  encrypt IN.json OUT.json
      IN: {"public_key": {"n", "g"}, "items": [{"m": "<m>", "r": "<r>"}, ...]}
      phe encrypts each m with the given randomness (encrypt(m, r_value=r)).
      OUT: {"public_key": {...}, "values": [["<c>", exponent], ...]}

Numbers are decimal strings; ciphertexts are phe EncryptedNumbers with exponent 0.
"""
import json
import sys

from phe import paillier


def public_key(d):
    pk = paillier.PaillierPublicKey(n=int(d["n"]))
    if "g" in d and int(d["g"]) != pk.g:
        raise SystemExit("g is not n + 1")
    return pk


def encrypted(pk, pair):
    c, exponent = pair
    return paillier.EncryptedNumber(pk, int(c), int(exponent))


def check_tally(inp):
    priv = inp["private_key"]
    pk = public_key(priv["public_key"])
    sk = paillier.PaillierPrivateKey(pk, int(priv["p"]), int(priv["q"]))
    ballots = [encrypted(pk, v) for v in inp["ballots"]["values"]]
    total = ballots[0]
    for b in ballots[1:]:
        total = total + b
    tally = encrypted(pk, inp["tally"])
    m = sk.decrypt(tally)
    r = int(inp["r"])
    return {
        "sum_equals_tally": total.ciphertext(be_secure=False) == tally.ciphertext(be_secure=False)
        and total.exponent == 0,
        "plaintext": str(m),
        "proof_ok": pk.raw_encrypt(int(inp["plaintext"]), r_value=r) == tally.ciphertext(be_secure=False),
    }


def encrypt(inp):
    pk = public_key(inp["public_key"])
    values = []
    for item in inp["items"]:
        enc = pk.encrypt(int(item["m"]), r_value=int(item["r"]))
        values.append([str(enc.ciphertext(be_secure=False)), enc.exponent])
    return {"public_key": {"g": str(pk.g), "n": str(pk.n)}, "values": values}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("check-tally", "encrypt"):
        raise SystemExit(__doc__)
    with open(sys.argv[2]) as f:
        inp = json.load(f)
    out = check_tally(inp) if sys.argv[1] == "check-tally" else encrypt(inp)
    with open(sys.argv[3], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
