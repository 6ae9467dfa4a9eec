// What a voter does with the booth, without the page: read a voter package, check its token
// against the election before anything is sent, make an encrypted ballot with its proofs, open it
// for an audit (Benaloh's challenge) or seal it into a signed vote transaction, and check an
// audit or someone else's ballot.
//
// Formats (docs/VOTING.md, "Voting from the booth"):
// - voter package (what `scalechain vote register --package-dir` writes):
//   `{"format": "scalechain-voter-package/1", "election": ID, "hash": NAME, "voter_key": SEED,
//     "voter_pubkey": HEX, "token": HEX}` — the Ed25519 seed (64 hex digits) is the secret;
//   `voter_pubkey` must be its public key.
// - ballot audit (what the page reveals, `scalechain vote audit` checks):
//   `{"format": "scalechain-ballot-audit/1", "election": ID, "hash": NAME, "voter_pubkey": HEX,
//     "ballot": HEX, "tracker": HEX, "choice": i, "randomness": [HEX, …]}` — one 32-byte
//   little-endian scalar per candidate.
//
// Invariants: a package's secret is never repeated in an error; a ballot leaves this module only
// as an audit (its randomness revealed, never to be cast) or as a sealed transaction (its opening
// dropped).

import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToNumberLE } from '@noble/curves/utils.js';

import {
  BoothError,
  bytesToHex,
  castBallot,
  concatBytes,
  decodeCastBallot,
  Election,
  hashParts,
  hasher,
  hexArray,
  tokenVerifies,
  tracker,
  txid,
  utf8ToBytes,
  varBytes,
  voteTx,
  voteTxData,
  voterPublicKey,
} from './chain.js';
import * as elgamal from './elgamal.js';

export const PACKAGE_FORMAT = 'scalechain-voter-package/1';
export const AUDIT_FORMAT = 'scalechain-ballot-audit/1';
/** The largest package or audit text read (a package is about 300 bytes, an audit of 64
 * candidates about 40 KB). */
export const MAX_TEXT = 256 * 1024;

function parseJson(what, text) {
  if (typeof text !== 'string') throw new BoothError(`${what}: not text`);
  if (text.length > MAX_TEXT) throw new BoothError(`${what}: ${text.length} characters, more than ${MAX_TEXT}`);
  let v;
  try {
    v = JSON.parse(text);
  } catch {
    throw new BoothError(`${what}: not JSON (a ${what} is a JSON object)`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new BoothError(`${what}: not a JSON object`);
  return v;
}

function field(what, v, name) {
  if (!(name in v)) throw new BoothError(`${what}: no "${name}" field`);
  return v[name];
}

/** A voter package from its text: `{ election, kind, seed, voterKey, token }` (bytes), or a
 * `BoothError` naming the field that is wrong, never its value. */
export function readPackage(text) {
  const what = 'voter package';
  const v = parseJson(what, text);
  if (v.format !== PACKAGE_FORMAT) {
    throw new BoothError(`${what}: "format" is not "${PACKAGE_FORMAT}" (is this the file \`scalechain vote register --package-dir\` wrote?)`);
  }
  const kind = field(what, v, 'hash');
  hasher(kind);
  const election = hexArray(`${what}: "election" (the election id)`, field(what, v, 'election'), 32);
  const seed = hexArray(`${what}: "voter_key" (the voter's secret key)`, field(what, v, 'voter_key'), 32);
  const token = hexArray(`${what}: "token" (the registration token)`, field(what, v, 'token'), 64);
  const voterKey = voterPublicKey(seed);
  if ('voter_pubkey' in v) {
    const listed = hexArray(`${what}: "voter_pubkey"`, v.voter_pubkey, 32);
    if (bytesToHex(listed) !== bytesToHex(voterKey)) {
      throw new BoothError(`${what}: "voter_pubkey" is not the public key of its "voter_key": the package is damaged`);
    }
  }
  return { election, kind, seed, voterKey, token };
}

/** The statement every proof binds: the election id and the voter key's hash. */
export function statement(kind, election, voterKey) {
  return { election: election.id(kind), voter: hasher(kind)(voterKey) };
}

/**
 * Checks that `pkg` may vote in `election` (decoded from the chain), before any ballot is made:
 * the package names this election, the scheme is `elgamal`, and the registration token verifies
 * for the package's own key under the election's token key (`vote-bad-token` otherwise: a token
 * minted for another key, or for another election).
 */
export function admit(kind, election, pkg) {
  if (kind !== pkg.kind) {
    throw new BoothError(`the package is for a chain hashing with ${pkg.kind}; this node's chain hashes with ${kind}`);
  }
  const id = election.id(kind);
  if (bytesToHex(id) !== bytesToHex(pkg.election)) {
    throw new BoothError(`the package is for election ${bytesToHex(pkg.election)}, not ${bytesToHex(id)}`);
  }
  // Decodes the key (a point, or `vote-bad-election`) and builds its tables before the voter
  // chooses, so that encrypting takes the time of the ballot alone.
  elgamal.electionKey(election.elgamalKey());
  if (!tokenVerifies(kind, election, pkg.voterKey, pkg.token)) {
    throw new BoothError(
      `the registration token in the package is not valid for its voter key ${bytesToHex(pkg.voterKey)} in this election: it was minted for another key or another election (the chain would refuse the ballot, vote-bad-token); nothing was sent`,
      'vote-bad-token',
    );
  }
}

/** An encrypted ballot for `choice`: `{ bytes, opening, tracker }` (the opening reveals it).
 * `random` as in `elgamal.cast`. */
export function makeBallot(kind, election, pkg, choice, random = elgamal.randomScalar) {
  const k = elgamal.electionKey(election.elgamalKey());
  const st = statement(kind, election, pkg.voterKey);
  const { ballot, opening } = elgamal.cast(k, st, choice, election.candidates, random);
  const bytes = elgamal.encode(ballot);
  return { bytes, opening, tracker: tracker(kind, bytes) };
}

/** The ballot sealed for casting: the signed vote transaction (hex) and its txid. The opening is
 * not kept. */
export function seal(kind, election, pkg, made) {
  const tx = voteTx(castBallot(kind, election, pkg.seed, pkg.token, made.bytes));
  return { tx: bytesToHex(tx), txid: bytesToHex(txid(kind, tx)), tracker: bytesToHex(made.tracker) };
}

/** The audit of a ballot that will not be cast: its randomness revealed, as JSON text. */
export function auditRecord(kind, election, pkg, made) {
  return JSON.stringify(
    {
      format: AUDIT_FORMAT,
      election: bytesToHex(election.id(kind)),
      hash: kind,
      voter_pubkey: bytesToHex(pkg.voterKey),
      ballot: bytesToHex(made.bytes),
      tracker: bytesToHex(made.tracker),
      choice: made.opening.choice,
      randomness: made.opening.r.map((r) => bytesToHex(elgamal.scalarBytes(r))),
    },
    null,
    1,
  );
}

/**
 * Checks an audit's text against `election` (decoded from the chain): it names this election,
 * the ballot decodes and its proofs verify for the named voter, its tracker is its hash, and each
 * ciphertext opens with the revealed randomness to the shown choice. Returns the choice, or throws
 * a `BoothError` saying what does not hold.
 */
export function checkAudit(kind, election, text) {
  const what = 'ballot audit';
  const v = parseJson(what, text);
  if (v.format !== AUDIT_FORMAT) throw new BoothError(`${what}: "format" is not "${AUDIT_FORMAT}"`);
  if (field(what, v, 'hash') !== kind) throw new BoothError(`${what}: made on a chain hashing with ${v.hash}, not ${kind}`);
  const id = hexArray(`${what}: "election"`, field(what, v, 'election'), 32);
  if (bytesToHex(id) !== bytesToHex(election.id(kind))) {
    throw new BoothError(`${what}: for election ${bytesToHex(id)}, not ${bytesToHex(election.id(kind))}`);
  }
  const voterKey = hexArray(`${what}: "voter_pubkey"`, field(what, v, 'voter_pubkey'), 32);
  const ballotHex = field(what, v, 'ballot');
  if (typeof ballotHex !== 'string' || ballotHex.length % 2 !== 0) throw new BoothError(`${what}: "ballot" is not hex`);
  const bytes = hexArray(`${what}: "ballot"`, ballotHex, ballotHex.length / 2);
  const listed = hexArray(`${what}: "tracker"`, field(what, v, 'tracker'), 32);
  if (bytesToHex(listed) !== bytesToHex(tracker(kind, bytes))) {
    throw new BoothError(`${what}: the tracker is not the ballot's hash`);
  }
  const choice = field(what, v, 'choice');
  const randomness = field(what, v, 'randomness');
  if (!Array.isArray(randomness) || randomness.length > 64) throw new BoothError(`${what}: "randomness" is not a list of at most 64 scalars`);
  const r = randomness.map((x, j) => bytesToNumberLE(hexArray(`${what}: random value ${j}`, x, 32)));
  const k = elgamal.electionKey(election.elgamalKey());
  const decoded = elgamal.decode(bytes);
  elgamal.verify(k, statement(kind, election, voterKey), decoded, election.candidates);
  elgamal.checkOpening(k, decoded, { choice, r });
  return choice;
}

/** Checks a signed vote transaction (hex) as a node's stateless and proof rules do: the token,
 * the voter's signature, the ballot's decoding and proofs. Throws a `BoothError` with the rule. */
export function checkBallotTx(kind, txHex) {
  return checkCast(kind, voteTxDataHex(txHex));
}

function voteTxDataHex(txHex) {
  if (typeof txHex !== 'string' || txHex.length % 2 !== 0) throw new BoothError('transaction: not hex');
  return voteTxData(hexArray('transaction', txHex, txHex.length / 2));
}

function checkCast(kind, data) {
  const b = decodeCastBallot(data);
  const e = b.election;
  const k = elgamal.electionKey(e.elgamalKey());
  if (!tokenVerifies(kind, e, b.voterKey, b.token)) {
    throw new BoothError('the registration token does not verify', 'vote-bad-token');
  }
  const body = concatBytes(e.encode(), b.voterKey, b.token, varBytes(b.ballot));
  const message = hashParts(kind, [utf8ToBytes('scalechain/vote/ballot'), body]);
  let signed = false;
  try {
    signed = ed25519.verify(b.signature, message, b.voterKey, { zip215: true });
  } catch {
    signed = false;
  }
  if (!signed) throw new BoothError("the voter's signature does not verify", 'vote-bad-signature');
  let decoded;
  try {
    decoded = elgamal.decode(b.ballot);
  } catch (x) {
    throw new BoothError(x.message, 'vote-malformed');
  }
  elgamal.verify(k, statement(kind, e, b.voterKey), decoded, e.candidates);
  return { election: e, voterKey: b.voterKey, tracker: tracker(kind, b.ballot) };
}

export { Election };
