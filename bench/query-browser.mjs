// Secondary-index queries in Chromium (the browser half of `npm run bench:query`): pqdb on the
// page's thread on IndexedDB and in a worker on OPFS, with indexes on `pos` and (`pos`, `offset`)
// and its values sealed, against Dexie and raw IndexedDB (IDBIndex.getAll with an IDBKeyRange) with
// the same two indexes and their values in clear, on 100,000 WordNet synsets in one page
// (browser-tests/page/bench.ts `query`). Equality: 100 records of one part of speech; range: 1,000
// consecutive offsets of one; each the median of --runs timed end to end with fresh parameters.
//
//   node bench/query-browser.mjs [--records 100000] [--runs 51] [--out report.json]
// Default report: bench/results/query-<arch>-chromium<major>-<date>[-n].json. Needs `npm run build`.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './migration/common.mjs';
import { launchChromiumProfile } from './chromium.mjs';
import { generateRecipient } from '../dist/node.js';
import { hostInfo, saveReport, synsets, rng, reportPath, runtimeTag } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const RUNS = Number(arg('--runs', 51));

const records = synsets(N).map(({ id, value: v }) => [id, v.lemma, v.pos, v.gloss, v.offset]);
const byPos = new Map();
for (const r of records) (byPos.get(r[2]) ?? byPos.set(r[2], []).get(r[2])).push(r[4]);
for (const l of byPos.values()) l.sort((a, b) => a - b);
const random = rng(11);
const big = [...byPos].filter(([, l]) => l.length > 1100).map(([p]) => p);
const params = Array.from({ length: RUNS }, () => {
  const pos = big[Math.floor(random() * big.length)];
  const l = byPos.get(pos);
  const at = Math.floor(random() * (l.length - 1001));
  return { pos, lo: l[at], hi: l[at + 1000] };
});
const r = generateRecipient();
const keys = { publicKey: Array.from(r.publicKey), secretKey: Array.from(r.secretKey) };

const port = await freePort();
const server = spawn(
  process.execPath,
  [fileURLToPath(new URL('../browser-tests/server.mjs', import.meta.url)), String(port)],
  {
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
await new Promise((resolve) => server.stdout.once('data', resolve));
const chrome = await launchChromiumProfile([]);
try {
  const page = await chrome.context.newPage();
  await page.goto(`http://127.0.0.1:${port}/bench`);
  await page.waitForFunction(() => 'pqdbBench' in globalThis);
  const { results, userAgent } = await page.evaluate((o) => globalThis.pqdbBench.query(o), { records, params, keys });
  const ratio = (peer, ours) => peer / ours;
  const report = {
    bench: 'query',
    host: hostInfo(),
    runtime: `chromium ${chrome.browser.version()}`,
    records: N,
    runs: RUNS,
    results,
    ratios: Object.fromEntries(
      ['pqdb-main-idb', 'pqdb-worker-opfs'].flatMap((m) =>
        ['dexie', 'indexeddb'].map((peer) => [
          `${m} vs ${peer}`,
          {
            equality: ratio(results[peer].equalityMs, results[m].equalityMs),
            range: ratio(results[peer].rangeMs, results[m].rangeMs),
          },
        ]),
      ),
    ),
  };
  for (const [k, v] of Object.entries(results))
    console.log(
      `${k.padEnd(18)} equality ${v.equalityMs.toFixed(2)} ms   range ${v.rangeMs.toFixed(2)} ms   (${v.form})`,
    );
  for (const [k, v] of Object.entries(report.ratios))
    console.log(`${k.padEnd(30)} equality ${v.equality.toFixed(2)}×   range ${v.range.toFixed(2)}×`);
  const out = arg('--out', undefined) ?? reportPath('query', { host: report.host, runtime: runtimeTag(userAgent) });
  saveReport('query', report, out);
  console.log(`report: ${out}`);
} finally {
  await chrome.close();
  server.kill();
}
