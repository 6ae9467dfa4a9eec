// Runs requests against the booth's bundled module (the file the explorer serves) for
// booth_interop.rs: `node booth_driver.mjs BUNDLE < requests.json > answers.json`. Each request
// is answered in order; a refusal is an answer (`{ ok: false, rule, error }`), not a crash.
//
// - `{ op: "cast", hash, election, seed, token, choice, random? }`: the booth's ballot for that
//   voter package (the token checked first, as the page does), with the scalars drawn from the
//   hex stream `random` (64 bytes each) if given; answers `{ ok, ballot, tx, txid, tracker,
//   audit }`.
// - `{ op: "check", hash, tx }`: the page's verifier on a signed vote transaction.
// - `{ op: "audit", hash, election, audit }`: the page's audit check; answers `{ ok, choice }`.

import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const booth = await import(pathToFileURL(process.argv[2]).href);
const { chain, elgamal, voter } = booth;

function stream(hex) {
  const bytes = chain.hexToBytes(hex);
  let at = 0;
  return () => {
    if (at + 64 > bytes.length) throw new Error(`the random stream of ${bytes.length} bytes ran out`);
    const s = elgamal.wideScalar(bytes.subarray(at, at + 64));
    at += 64;
    return s;
  };
}

function answer(q) {
  const kind = q.hash;
  switch (q.op) {
    case 'cast': {
      const election = chain.Election.decode(chain.hexToBytes(q.election));
      const seed = chain.hexToBytes(q.seed);
      const pkg = { election: election.id(kind), kind, seed, voterKey: chain.voterPublicKey(seed), token: chain.hexToBytes(q.token) };
      voter.admit(kind, election, pkg);
      const made = voter.makeBallot(kind, election, pkg, q.choice, q.random ? stream(q.random) : undefined);
      const audit = voter.auditRecord(kind, election, pkg, made);
      const sealed = voter.seal(kind, election, pkg, made);
      return { ok: true, ballot: chain.bytesToHex(made.bytes), tx: sealed.tx, txid: sealed.txid, tracker: sealed.tracker, audit };
    }
    case 'check': {
      const r = voter.checkBallotTx(kind, q.tx);
      return { ok: true, tracker: chain.bytesToHex(r.tracker) };
    }
    case 'audit': {
      const election = chain.Election.decode(chain.hexToBytes(q.election));
      return { ok: true, choice: voter.checkAudit(kind, election, q.audit) };
    }
    default:
      throw new Error(`unknown op ${q.op}`);
  }
}

const out = JSON.parse(readFileSync(0, 'utf8')).map((q) => {
  try {
    return answer(q);
  } catch (x) {
    if (!(x instanceof chain.BoothError)) throw x;
    return { ok: false, rule: x.rule || null, error: x.message };
  }
});
process.stdout.write(JSON.stringify(out));
