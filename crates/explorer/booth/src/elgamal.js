// The `elgamal` ballot scheme in the browser (crates/voting/src/elgamal.rs, docs/VOTING.md):
// exponential ElGamal on ristretto255, one ciphertext per candidate, a disjunctive
// Chaum–Pedersen proof that each encrypts 0 or 1, and a Chaum–Pedersen proof that they sum to 1.
//
// Notation: `G` the ristretto basepoint, `K` the election key. A vote `v ∈ {0, 1}` for candidate
// `j` is `(α, β) = (r·G, v·G + r·K)`. Every challenge is `SHA-512(tag ‖ parts) mod ℓ` over
// u32-length-prefixed parts: the tag, a label (`bit` or `sum`), the election id, the voter key's
// hash, an extra part (the candidate index, u32 LE, for `bit`; empty for `sum`), then the points'
// encodings (`K α β a_0 b_0 a_1 b_1`, or `K A B t_1 t_2` with `A = Σα`, `B = Σβ − G`).
//
// Invariants: the encoding is the Rust `Ballot::encode` byte for byte; the decoder accepts
// exactly what `WireBallot::decode` accepts (canonical points and scalars, exact length, 1 to 64
// candidates); the verifier accepts exactly the ballots whose equations all hold. The voter's
// `r` and the proofs' nonces go through `multiply`, noble's constant-time multiplication; the
// verifier handles public data with `multiplyUnsafe`.

import { ristretto255 } from '@noble/curves/ed25519.js';
import { bytesToNumberLE, numberToBytesLE } from '@noble/curves/utils.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';

import { BoothError, MAX_CANDIDATES, Reader, u32le } from './chain.js';

const Point = ristretto255.Point;
const G = Point.BASE;
/** The group order ℓ. */
export const L = Point.Fn.ORDER;
const TAG = utf8ToBytes('scalechain/vote/elgamal/v1');
/** Bytes per candidate on the wire: `α β a_0 b_0 a_1 b_1` and `c_0 s_0 s_1`. */
const PER_CANDIDATE = 9 * 32;

/** Window of the election key's precomputed multiples: every multiplication in `cast` is then
 * by `G` or `K`, both with tables. */
const KEY_WINDOW = 8;

const mod = (x) => ((x % L) + L) % L;

/** A scalar from 64 bytes, reduced mod ℓ (`Scalar::from_bytes_mod_order_wide`). */
export function wideScalar(b) {
  return mod(bytesToNumberLE(b));
}

/** A uniform scalar from 64 bytes of the platform's CSPRNG. */
export function randomScalar() {
  const b = new Uint8Array(64);
  globalThis.crypto.getRandomValues(b);
  return wideScalar(b);
}

/** `s·P` in constant time (noble's `multiply`; zero, drawn with probability 2^−252, is the
 * identity). */
function mulCt(p, s) {
  return s === 0n ? Point.ZERO : p.multiply(s);
}

/** `s·P` for public data. */
function mulVt(p, s) {
  return p.multiplyUnsafe(s);
}

const enc = (p) => p.toBytes();
const scalarBytes = (s) => numberToBytesLE(s, 32);

function challenge(st, label, points, extra) {
  const parts = [TAG, utf8ToBytes(label), st.election, st.voter, extra, ...points];
  const h = sha512.create();
  for (const p of parts) {
    h.update(u32le(p.length));
    h.update(p);
  }
  return mod(bytesToNumberLE(h.digest()));
}

const bitChallenge = (st, kb, j, pts) => challenge(st, 'bit', [kb, ...pts], u32le(j));
const sumChallenge = (st, kb, a, b, t) => challenge(st, 'sum', [kb, a, b, ...t], new Uint8Array(0));

/** `a = s·G − c·α`, `b = s·K − c·(β − bit·G)`: the commitments a branch's challenge and response
 * imply. */
function bitCommitments(k, ct, bit, c, s) {
  const shifted = bit === 1 ? ct.beta.subtract(G) : ct.beta;
  return [mulVt(G, s).subtract(mulVt(ct.alpha, c)), mulVt(k, s).subtract(mulVt(shifted, c))];
}

/** The election key `K` from its 32 bytes, or a `BoothError`. */
export function electionKey(bytes) {
  const hex = bytesToHex(bytes);
  if (keys.has(hex)) return keys.get(hex);
  let k;
  try {
    k = Point.fromBytes(bytes);
  } catch {
    throw new BoothError('the election key is not a ristretto255 point', 'vote-bad-election');
  }
  k.precompute(KEY_WINDOW, false);
  keys.set(hex, k);
  return k;
}

/** Election keys decoded so far, with their tables (a page sees one or two). */
const keys = new Map();

/**
 * Encrypts a vote for candidate `choice` of `candidates` under `K` (a point), with its proofs.
 * `st` is `{ election: id bytes, voter: H(voter key) bytes }`. Returns the ballot and its
 * opening (the randomness `r_j`, for an audit); the opening must be discarded once cast.
 * `random` draws each scalar (the platform's CSPRNG unless a test replays a stream): per
 * candidate `r`, the real branch's nonce, the simulated branch's challenge and response, then
 * the sum proof's nonce — the order of the Rust `cast_opened`, so one stream gives one ballot.
 */
export function cast(k, st, choice, candidates, random = randomScalar) {
  if (!Number.isInteger(candidates) || candidates < 1 || candidates > MAX_CANDIDATES) {
    throw new BoothError(`${candidates} candidates (1 to ${MAX_CANDIDATES} allowed)`);
  }
  if (!Number.isInteger(choice) || choice < 0 || choice >= candidates) {
    throw new BoothError(`choice ${choice}: the election has candidates 0 to ${candidates - 1}`);
  }
  const kb = enc(k);
  const cts = [];
  const bits = [];
  const rs = [];
  let rSum = 0n;
  for (let j = 0; j < candidates; j += 1) {
    const v = j === choice ? 1 : 0;
    const r = random();
    rs.push(r);
    rSum = mod(rSum + r);
    const ct = { alpha: mulCt(G, r), beta: mulCt(k, r) };
    if (v === 1) ct.beta = ct.beta.add(G);
    // The real branch `v`, the simulated one `1 − v`. The simulated commitments are those
    // `bitCommitments` implies, `s·G − c·α` and `s·K − c·(β − (1 − v)·G)`, computed from the
    // opening (α = r·G, β − (1 − v)·G = r·K + (2v − 1)·G) as multiples of `G` and `K` only.
    const w = random();
    const cSim = random();
    const sSim = random();
    const real = [mulCt(G, w), mulCt(k, w)];
    const e = mod(sSim - cSim * r);
    const cG = mulCt(G, cSim);
    const sim = [mulCt(G, e), v === 1 ? mulCt(k, e).subtract(cG) : mulCt(k, e).add(cG)];
    const a = v === 0 ? [real[0], sim[0]] : [sim[0], real[0]];
    const b = v === 0 ? [real[1], sim[1]] : [sim[1], real[1]];
    const pts = [ct.alpha, ct.beta, a[0], b[0], a[1], b[1]].map(enc);
    const c = bitChallenge(st, kb, j, pts);
    const cReal = mod(c - cSim);
    const sReal = mod(w + cReal * r);
    const proof = v === 0 ? { a, b, c0: cReal, s: [sReal, sSim] } : { a, b, c0: cSim, s: [sSim, sReal] };
    cts.push(ct);
    bits.push(proof);
  }
  // Σα = R·G and Σβ − G = R·K: equality of discrete logs, witness R = Σ r_j.
  const [sa, sb] = sums(cts);
  const w = random();
  const t = [mulCt(G, w), mulCt(k, w)];
  const c = sumChallenge(st, kb, enc(sa), enc(sb), t.map(enc));
  const ballot = { cts, bits, sum: { t, s: mod(w + c * rSum) } };
  return { ballot, opening: { choice, r: rs } };
}

function sums(cts) {
  let a = Point.ZERO;
  let b = Point.ZERO;
  for (const ct of cts) {
    a = a.add(ct.alpha);
    b = b.add(ct.beta);
  }
  return [a, b.subtract(G)];
}

/** The canonical encoding: count (u32 LE), per candidate `α β a0 b0 a1 b1 c0 s0 s1`, then
 * `t1 t2 s`; 32 bytes each. */
export function encode(ballot) {
  const parts = [u32le(ballot.cts.length)];
  ballot.cts.forEach((ct, j) => {
    const p = ballot.bits[j];
    parts.push(...[ct.alpha, ct.beta, p.a[0], p.b[0], p.a[1], p.b[1]].map(enc));
    parts.push(...[p.c0, p.s[0], p.s[1]].map(scalarBytes));
  });
  parts.push(enc(ballot.sum.t[0]), enc(ballot.sum.t[1]), scalarBytes(ballot.sum.s));
  return concatBytes(...parts);
}

/** Decodes `encode`'s output exactly (as `WireBallot::decode`): the ballot and its points' wire
 * bytes, in wire order. */
export function decode(bytes) {
  const r = new Reader(bytes, 'ballot');
  const n = r.u32('candidates');
  if (n === 0 || n > MAX_CANDIDATES) throw r.fail('candidates', `${n} candidates (1 to ${MAX_CANDIDATES} allowed)`);
  if (bytes.length - 4 !== n * PER_CANDIDATE + 96) {
    throw r.fail('candidates', `${n} candidates take ${4 + n * PER_CANDIDATE + 96} bytes, not ${bytes.length}`);
  }
  const wire = [];
  const point = (field) => {
    const b = r.take(field, 32);
    try {
      const p = Point.fromBytes(b);
      wire.push(b);
      return p;
    } catch {
      throw r.fail(field, 'not a canonical ristretto255 point');
    }
  };
  const scalar = (field) => {
    const s = bytesToNumberLE(r.take(field, 32));
    if (s >= L) throw r.fail(field, 'scalar not reduced mod ℓ');
    return s;
  };
  const cts = [];
  const bits = [];
  for (let j = 0; j < n; j += 1) {
    const alpha = point('alpha');
    const beta = point('beta');
    cts.push({ alpha, beta });
    const a0 = point('bit.a0');
    const b0 = point('bit.b0');
    const a1 = point('bit.a1');
    const b1 = point('bit.b1');
    const c0 = scalar('bit.c0');
    const s0 = scalar('bit.s0');
    const s1 = scalar('bit.s1');
    bits.push({ a: [a0, a1], b: [b0, b1], c0, s: [s0, s1] });
  }
  const t1 = point('sum.t1');
  const t2 = point('sum.t2');
  const sum = { t: [t1, t2], s: scalar('sum.s') };
  r.finish();
  return { ballot: { cts, bits, sum }, wire };
}

/**
 * Checks a decoded ballot's proofs for an election of `candidates` candidates, equation by
 * equation: throws a `BoothError` naming the rule (`vote-wrong-candidates`,
 * `vote-bad-choice-proof` with the candidate, `vote-bad-sum-proof`).
 */
export function verify(k, st, decoded, candidates) {
  const { ballot, wire } = decoded;
  if (ballot.cts.length !== candidates) {
    throw new BoothError(`${ballot.cts.length} ciphertexts for ${candidates} candidates`, 'vote-wrong-candidates');
  }
  const kb = enc(k);
  ballot.cts.forEach((ct, j) => {
    const p = ballot.bits[j];
    const c = bitChallenge(st, kb, j, wire.slice(6 * j, 6 * j + 6));
    const cs = [p.c0, mod(c - p.c0)];
    for (const bit of [0, 1]) {
      const [a, b] = bitCommitments(k, ct, bit, cs[bit], p.s[bit]);
      if (!a.equals(p.a[bit]) || !b.equals(p.b[bit])) {
        throw new BoothError(`candidate ${j}'s 0/1 proof does not verify`, 'vote-bad-choice-proof');
      }
    }
  });
  const [sa, sb] = sums(ballot.cts);
  const l = ballot.cts.length;
  const c = sumChallenge(st, kb, enc(sa), enc(sb), wire.slice(6 * l, 6 * l + 2));
  const s = ballot.sum.s;
  const t1 = mulVt(G, s).subtract(mulVt(sa, c));
  const t2 = mulVt(k, s).subtract(mulVt(sb, c));
  if (!t1.equals(ballot.sum.t[0]) || !t2.equals(ballot.sum.t[1])) {
    throw new BoothError('the proof that the votes sum to one does not verify', 'vote-bad-sum-proof');
  }
}

/**
 * An audit (Benaloh's challenge): does each ciphertext `j` of the decoded ballot open, with the
 * revealed randomness `r_j`, to `[j == choice]`: `α_j = r_j·G` and `β_j = v_j·G + r_j·K`?
 * Throws a `BoothError` naming the first candidate that does not.
 */
export function checkOpening(k, decoded, opening) {
  const { cts } = decoded.ballot;
  if (!Number.isInteger(opening.choice) || opening.choice < 0 || opening.choice >= cts.length) {
    throw new BoothError(`the audit's choice ${opening.choice} is not one of candidates 0 to ${cts.length - 1}`);
  }
  if (opening.r.length !== cts.length) {
    throw new BoothError(`the audit reveals ${opening.r.length} random values for ${cts.length} ciphertexts`);
  }
  cts.forEach((ct, j) => {
    const r = opening.r[j];
    if (typeof r !== 'bigint' || r < 0n || r >= L) throw new BoothError(`random value ${j} is not a scalar below ℓ`);
    const alpha = mulVt(G, r);
    let beta = mulVt(k, r);
    if (j === opening.choice) beta = beta.add(G);
    if (!alpha.equals(ct.alpha) || !beta.equals(ct.beta)) {
      throw new BoothError(
        `ciphertext ${j} does not encrypt ${j === opening.choice ? 1 : 0} with the revealed randomness: the ballot does not encrypt candidate ${opening.choice}`,
      );
    }
  });
}

export { scalarBytes };
