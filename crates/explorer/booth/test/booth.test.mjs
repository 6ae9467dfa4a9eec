// The booth's ballot code on its own (node --test): packages read or refused with the field
// named and the secret never repeated, a token for another key refused before any ballot is
// made, ballots that verify and open to their choice, tampered ballots and audits refused, and
// decoding as strict as the Rust decoder's. Byte-exactness against the Rust code is
// crates/explorer/tests/booth_interop.rs.

import assert from 'node:assert/strict';
import test from 'node:test';

import { ed25519, ristretto255 } from '@noble/curves/ed25519.js';

import * as chain from '../src/chain.js';
import * as elgamal from '../src/elgamal.js';
import { refusalWords } from '../src/page.js';
import * as voter from '../src/voter.js';

const kind = 'sha256';
const tokenSeed = new Uint8Array(32).fill(7);

function election(candidates) {
  const k = ristretto255.Point.BASE.multiply(elgamal.randomScalar());
  const e = new chain.Election();
  e.candidates = candidates;
  e.start = 5n;
  e.end = 100n;
  e.scheme = chain.SCHEME_ELGAMAL;
  e.tokenKey = ed25519.getPublicKey(tokenSeed);
  e.electionKey = chain.concatBytes(chain.u64le(20), k.toBytes());
  e.label = chain.utf8ToBytes('test');
  return e;
}

function packageText(e, seed, tokenFor = seed) {
  const token = ed25519.sign(chain.tokenMessage(kind, e.id(kind), ed25519.getPublicKey(tokenFor)), tokenSeed);
  return JSON.stringify({
    format: voter.PACKAGE_FORMAT,
    election: chain.bytesToHex(e.id(kind)),
    hash: kind,
    voter_key: chain.bytesToHex(seed),
    voter_pubkey: chain.bytesToHex(ed25519.getPublicKey(seed)),
    token: chain.bytesToHex(token),
  });
}

test('an election descriptor round-trips and refuses trailing bytes', () => {
  const e = election(4);
  const bytes = e.encode();
  assert.deepEqual(chain.Election.decode(bytes).encode(), bytes);
  assert.throws(() => chain.Election.decode(chain.concatBytes(bytes, Uint8Array.of(0))), /1 bytes past its end/);
  assert.throws(() => chain.Election.decode(bytes.subarray(0, 30)), /token_key/);
});

test('a package that is not one is named, its secret never repeated', () => {
  const e = election(3);
  const seed = new Uint8Array(32).fill(0x3f);
  const good = JSON.parse(packageText(e, seed));
  const secret = good.voter_key;
  const cases = [
    ['my secret diary: the safe opens with 4711', /not JSON/],
    [JSON.stringify({ ...good, format: 'other' }), /"format" is not/],
    [JSON.stringify({ ...good, voter_key: `${secret.slice(0, 20)}z${secret.slice(21)}` }), /character 21 of 64 is not a hex digit/],
    [JSON.stringify({ ...good, voter_key: `${secret}ab` }), /66 hex digits, not 64/],
    [JSON.stringify({ ...good, token: undefined }), /no "token" field/],
    [JSON.stringify({ ...good, hash: 'md5' }), /unknown hash function/],
    [JSON.stringify({ ...good, voter_pubkey: chain.bytesToHex(new Uint8Array(32)) }), /not the public key of its "voter_key"/],
  ];
  for (const [text, says] of cases) {
    assert.throws(() => voter.readPackage(text), (x) => {
      assert.match(x.message, says);
      assert.ok(!x.message.includes(secret.slice(0, 8)), `the secret repeated in ${x.message}`);
      assert.ok(!x.message.includes('4711'), x.message);
      return x instanceof chain.BoothError;
    });
  }
  assert.deepEqual(voter.readPackage(JSON.stringify(good)).voterKey, ed25519.getPublicKey(seed));
});

test('a token minted for another key is refused before a ballot is made', () => {
  const e = election(3);
  const mine = new Uint8Array(32).fill(1);
  const theirs = new Uint8Array(32).fill(2);
  const pkg = voter.readPackage(packageText(e, mine, theirs));
  assert.throws(() => voter.admit(kind, e, pkg), (x) => x.rule === 'vote-bad-token' && /nothing was sent/.test(x.message));
  voter.admit(kind, e, voter.readPackage(packageText(e, mine)));
  // Another election's package.
  assert.throws(() => voter.admit(kind, election(3), pkg), /the package is for election/);
});

test('ballots verify as sealed transactions and open to their choice when audited', () => {
  for (const candidates of [1, 3, 10]) {
    const e = election(candidates);
    const pkg = voter.readPackage(packageText(e, new Uint8Array(32).fill(candidates)));
    voter.admit(kind, e, pkg);
    const choice = candidates - 1;
    const made = voter.makeBallot(kind, e, pkg, choice);
    assert.equal(made.bytes.length, 4 + 288 * candidates + 96);
    const sealed = voter.seal(kind, e, pkg, made);
    const checked = voter.checkBallotTx(kind, sealed.tx);
    assert.equal(chain.bytesToHex(checked.tracker), sealed.tracker);
    const audit = voter.auditRecord(kind, e, voter.readPackage(packageText(e, new Uint8Array(32).fill(candidates))), made);
    assert.equal(voter.checkAudit(kind, e, audit), choice);
    // The shown choice must be the encrypted one.
    if (candidates > 1) {
      const lie = { ...JSON.parse(audit), choice: 0 };
      assert.throws(() => voter.checkAudit(kind, e, JSON.stringify(lie)), /does not encrypt candidate 0/);
    }
    // Randomness that does not open the ciphertext.
    const wrong = JSON.parse(audit);
    wrong.randomness[0] = chain.bytesToHex(elgamal.scalarBytes(1n));
    assert.throws(() => voter.checkAudit(kind, e, JSON.stringify(wrong)), /ciphertext 0 does not encrypt/);
  }
});

test('tampered ballots are refused with their rule', () => {
  const e = election(3);
  const pkg = voter.readPackage(packageText(e, new Uint8Array(32).fill(5)));
  const made = voter.makeBallot(kind, e, pkg, 1);
  const k = elgamal.electionKey(e.elgamalKey());
  const st = voter.statement(kind, e, pkg.voterKey);
  // A response changed: candidate 0's proof fails.
  const bad = made.bytes.slice();
  bad[4 + 7 * 32] ^= 1;
  assert.throws(() => elgamal.verify(k, st, elgamal.decode(bad), 3), (x) => x.rule === 'vote-bad-choice-proof');
  // The sum proof's response changed.
  const sum = made.bytes.slice();
  sum[sum.length - 32] ^= 1;
  assert.throws(() => elgamal.verify(k, st, elgamal.decode(sum), 3), (x) => x.rule === 'vote-bad-sum-proof');
  // Another voter's statement: every proof is bound to its voter.
  const other = voter.statement(kind, e, new Uint8Array(32).fill(9));
  assert.throws(() => elgamal.verify(k, other, elgamal.decode(made.bytes), 3), (x) => x.rule === 'vote-bad-choice-proof');
  // Strict decoding: a scalar not below ℓ, a trailing byte, a count that does not match.
  const big = made.bytes.slice();
  big.fill(0xff, 4 + 6 * 32, 4 + 7 * 32);
  assert.throws(() => elgamal.decode(big), /scalar not reduced/);
  assert.throws(() => elgamal.decode(chain.concatBytes(made.bytes, Uint8Array.of(0))), /take/);
  const zero = made.bytes.slice();
  zero.set([0, 0, 0, 0], 0);
  assert.throws(() => elgamal.decode(zero), /0 candidates/);
  // A signed transaction with a changed byte of its ballot: the signature no longer holds.
  const sealed = voter.seal(kind, e, pkg, made);
  const tx = chain.hexToBytes(sealed.tx);
  tx[tx.length - 100] ^= 1;
  assert.throws(() => voter.checkBallotTx(kind, chain.bytesToHex(tx)), (x) => x.rule === 'vote-bad-signature');
});

test('refusals are put in words, the rule named', () => {
  assert.match(refusalWords('vote-double-vote', 'vote-double-vote: voter … has already voted'), /already voted.*\(vote-double-vote\)/);
  assert.match(refusalWords('vote-outside-window', ''), /outside its voting window/);
  assert.match(refusalWords('something-new', 'what'), /something-new: what/);
});
