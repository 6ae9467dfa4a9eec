// The booth's one ES module (bundled into crates/explorer/assets/booth.js by build.mjs): the
// ballot code the page runs, exported for anyone to check it (the interoperability test runs
// these exports under Node.js against the Rust verifier), and the page itself when loaded by
// the booth's HTML.

import { ristretto255 } from '@noble/curves/ed25519.js';

import * as chain from './chain.js';
import * as elgamal from './elgamal.js';
import { booth, refusalWords } from './page.js';
import * as voter from './voter.js';

export { chain, elgamal, voter, refusalWords };

/**
 * Times encrypting and proving one ballot of `candidates` candidates under a fresh election key
 * (its tables built first, as the booth does once the election is loaded): the milliseconds of
 * each of `rounds` ballots, and of building the key's tables.
 */
export function measure(candidates, rounds) {
  const k0 = ristretto255.Point.BASE.multiply(elgamal.randomScalar());
  const t0 = performance.now();
  const k = elgamal.electionKey(k0.toBytes());
  const tables = performance.now() - t0;
  const st = { election: new Uint8Array(32).fill(1), voter: new Uint8Array(32).fill(2) };
  const ms = [];
  for (let i = 0; i < rounds; i += 1) {
    const t = performance.now();
    elgamal.encode(elgamal.cast(k, st, i % candidates, candidates).ballot);
    ms.push(performance.now() - t);
  }
  return { candidates, tables_ms: tables, ms };
}

if (typeof document !== 'undefined') {
  const root = document.getElementById('booth');
  if (root) booth(root);
}
