// Bundles src/index.js and its dependencies into the explorer's one booth module,
// ../assets/booth.js, with its source map (the sources inlined) beside it as booth.js.map.
// Reproducible: the same sources and the locked versions give the same bytes (.ci/booth-bundle.sh
// rebuilds and compares). `node build.mjs --out DIR` writes elsewhere.

import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const i = process.argv.indexOf('--out');
const out = i > 0 ? path.resolve(process.argv[i + 1]) : path.join(here, '..', 'assets');

await build({
  absWorkingDir: here,
  entryPoints: ['src/index.js'],
  outfile: path.join(out, 'booth.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  sourcesContent: true,
  legalComments: 'eof',
  charset: 'utf8',
  logLevel: 'warning',
});
