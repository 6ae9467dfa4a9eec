// The chain's encodings a ballot needs, as docs/VOTING.md and docs/PROTOCOL.md define them:
// the hash functions, the election descriptor (its id, its key), the registration token's
// message, the cast ballot with the voter's signature, the vote transaction and its txid.
//
// Invariants: every decoder reads exactly (lengths bounded before anything is allocated, no
// trailing bytes) and throws a `BoothError` naming the field; every encoder writes what the Rust
// encoder of the same name writes, byte for byte (crates/explorer/tests/booth_interop.rs).

import { ed25519 } from '@noble/curves/ed25519.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { sha256, sha512_256 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';

/** An error for a person: what is wrong and where; `rule` names the chain's rule, if one. */
export class BoothError extends Error {
  constructor(message, rule) {
    super(message);
    this.name = 'BoothError';
    this.rule = rule;
  }
}

/** The chain's hash functions by name (`HashKind::name`). */
export const HASHES = { sha256, sha512_256, blake3 };

/** The hash function named `name`, or a `BoothError`. */
export function hasher(name) {
  const h = HASHES[name];
  if (!h) throw new BoothError(`unknown hash function ${JSON.stringify(name)} (sha256, sha512_256 or blake3)`);
  return h;
}

/** `H(p_1 ‖ … ‖ p_n)` (`HashKind::hash_parts`). */
export function hashParts(kind, parts) {
  return hasher(kind)(concatBytes(...parts));
}

/** The voting module's transaction kind. */
export const VOTE_KIND = 2;
/** Ballot scheme bytes. */
export const SCHEME_ELGAMAL = 0;
export const SCHEME_PAILLIER = 1;
/** Bounds of the election descriptor (`app::MAX_ELECTION_KEY`, `app::MAX_LABEL`). */
export const MAX_ELECTION_KEY = 520;
export const MAX_LABEL = 64;
/** The most candidates an election may have. */
export const MAX_CANDIDATES = 64;

export function u32le(n) {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n, true);
  return out;
}

export function u64le(n) {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
  return out;
}

/** `bytes`: a u32 LE length and the bytes. */
export function varBytes(b) {
  return concatBytes(u32le(b.length), b);
}

/** Reads an encoding exactly; every failure names its field. */
export class Reader {
  constructor(bytes, what) {
    this.b = bytes;
    this.at = 0;
    this.what = what;
  }

  fail(field, why) {
    return new BoothError(`${this.what}: ${field}: ${why} (at byte ${this.at})`);
  }

  take(field, n) {
    if (this.b.length - this.at < n) {
      throw this.fail(field, `${n} bytes needed, ${this.b.length - this.at} left`);
    }
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  u8(field) {
    return this.take(field, 1)[0];
  }

  u32(field) {
    const b = this.take(field, 4);
    return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true);
  }

  u64(field) {
    const b = this.take(field, 8);
    return new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true);
  }

  /** A u32 length, at most `max`, then that many bytes. */
  varBytes(field, max) {
    const n = this.u32(field);
    if (n > max) throw this.fail(field, `${n} bytes (at most ${max})`);
    return this.take(field, n);
  }

  finish() {
    if (this.at !== this.b.length) {
      throw new BoothError(`${this.what}: ${this.b.length - this.at} bytes past its end`);
    }
  }
}

/** Exactly `n` bytes of hex (white space around it ignored), or a `BoothError` that says what is
 * wrong without repeating the text (it may be a secret key). */
export function hexArray(what, text, n) {
  if (typeof text !== 'string') throw new BoothError(`${what}: not a string of hex digits`);
  const s = text.trim();
  const bad = [...s].findIndex((c) => !/[0-9a-fA-F]/.test(c));
  if (bad >= 0) {
    throw new BoothError(`${what}: character ${bad + 1} of ${[...s].length} is not a hex digit (expected ${2 * n} hex digits)`);
  }
  if (s.length !== 2 * n) throw new BoothError(`${what}: ${s.length} hex digits, not ${2 * n}`);
  return hexToBytes(s.toLowerCase());
}

/** An election as published (`app::Election`). */
export class Election {
  /** Decodes `Election::encode` exactly. */
  static decode(bytes) {
    const r = new Reader(bytes, 'election');
    const e = Election.read(r);
    r.finish();
    return e;
  }

  static read(r) {
    const e = new Election();
    e.candidates = r.u8('candidates');
    e.start = r.u64('start');
    e.end = r.u64('end');
    e.scheme = r.u8('scheme');
    e.tokenKey = r.take('token_key', 32);
    e.electionKey = r.varBytes('election_key', MAX_ELECTION_KEY);
    e.label = r.varBytes('label', MAX_LABEL);
    return e;
  }

  encode() {
    return concatBytes(
      Uint8Array.of(this.candidates),
      u64le(this.start),
      u64le(this.end),
      Uint8Array.of(this.scheme),
      this.tokenKey,
      varBytes(this.electionKey),
      varBytes(this.label),
    );
  }

  /** The election id under hash function `kind`. */
  id(kind) {
    return hasher(kind)(this.encode());
  }

  /** The most ballots it counts (the election key's first 8 bytes). */
  voters() {
    if (this.electionKey.length < 8) throw new BoothError('the election key has no voter count', 'vote-bad-election');
    return new DataView(this.electionKey.buffer, this.electionKey.byteOffset, 8).getBigUint64(0, true);
  }

  /** The label as text. */
  labelText() {
    return new TextDecoder().decode(this.label);
  }

  /** The `elgamal` election key `K` (32 bytes), or a `BoothError` for another scheme or a key
   * that is not one. */
  elgamalKey() {
    if (this.scheme !== SCHEME_ELGAMAL) {
      const name = this.scheme === SCHEME_PAILLIER ? 'paillier' : `unknown (${this.scheme})`;
      throw new BoothError(`this booth casts elgamal ballots; the election's scheme is ${name}`);
    }
    if (this.candidates < 1 || this.candidates > MAX_CANDIDATES) {
      throw new BoothError(`${this.candidates} candidates (1 to ${MAX_CANDIDATES})`, 'vote-bad-election');
    }
    if (this.electionKey.length !== 40) {
      throw new BoothError(`an elgamal key has 40 bytes, not ${this.electionKey.length}`, 'vote-bad-election');
    }
    return this.electionKey.subarray(8);
  }
}

/** The message a registration token signs: `H("scalechain/vote/token" ‖ id ‖ H(voter key))`. */
export function tokenMessage(kind, electionId, voterKey) {
  return hashParts(kind, [utf8ToBytes('scalechain/vote/token'), electionId, hasher(kind)(voterKey)]);
}

/** Does `token` verify under the election's token key for `voterKey` (ZIP-215, as the chain)? */
export function tokenVerifies(kind, election, voterKey, token) {
  try {
    return ed25519.verify(token, tokenMessage(kind, election.id(kind), voterKey), election.tokenKey, { zip215: true });
  } catch {
    return false;
  }
}

/** The voter's public key of an Ed25519 seed. */
export function voterPublicKey(seed) {
  return ed25519.getPublicKey(seed);
}

/** A cast ballot (`app::CastBallot`) signed with the voter's seed: the encodings. */
export function castBallot(kind, election, seed, token, ballot) {
  const voterKey = ed25519.getPublicKey(seed);
  const body = concatBytes(election.encode(), voterKey, token, varBytes(ballot));
  const message = hashParts(kind, [utf8ToBytes('scalechain/vote/ballot'), body]);
  const signature = ed25519.sign(message, seed);
  return concatBytes(Uint8Array.of(1), body, signature);
}

/** A cast ballot message decoded (`Message::decode` of tag 1). */
export function decodeCastBallot(bytes) {
  const r = new Reader(bytes, 'ballot message');
  const tag = r.u8('tag');
  if (tag !== 1) throw r.fail('tag', `message ${tag} is not a ballot`);
  const election = Election.read(r);
  const voterKey = r.take('voter_key', 32);
  const token = r.take('token', 64);
  const ballot = r.varBytes('ballot', 1 << 20);
  const signature = r.take('signature', 64);
  r.finish();
  return { election, voterKey, token, ballot, signature };
}

/** The vote transaction carrying `data`: version 1, kind 2, no inputs, no outputs. */
export function voteTx(data) {
  return concatBytes(u32le(1), Uint8Array.of(VOTE_KIND), u32le(0), u32le(0), varBytes(data));
}

/** The transaction's data, if it is a bare vote transaction. */
export function voteTxData(tx) {
  const r = new Reader(tx, 'transaction');
  if (r.u32('version') !== 1) throw r.fail('version', 'not 1');
  if (r.u8('kind') !== VOTE_KIND) throw r.fail('kind', 'not a vote transaction');
  if (r.u32('inputs') !== 0 || r.u32('outputs') !== 0) throw r.fail('inputs', 'a ballot has no inputs or outputs');
  const data = r.varBytes('data', 1 << 22);
  r.finish();
  return data;
}

/** A transaction's txid: `H(encoding)` (a vote transaction has no witnesses). */
export function txid(kind, tx) {
  return hasher(kind)(tx);
}

/** The ballot tracker: `H(encrypted ballot)`, what the bulletin board lists. */
export function tracker(kind, ballot) {
  return hasher(kind)(ballot);
}

export { bytesToHex, hexToBytes, concatBytes, utf8ToBytes };
