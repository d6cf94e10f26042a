// Secondary-index queries in Chromium (the browser half of `npm run bench:query`): pqdb on the
// page's thread on IndexedDB and in a worker on OPFS, with indexes on `pos` and (`pos`, `offset`)
// and its values sealed, against Dexie and raw IndexedDB (IDBIndex.getAll with an IDBKeyRange) with
// the same two indexes and their values in clear, on 100,000 WordNet synsets in one page
// (browser-tests/page/bench.ts `query`). Equality: 100 records of one part of speech; range: 1,000
// consecutive offsets of one; each the median of --runs timed end to end with fresh parameters.
//
//   node bench/query-browser.mjs [--records 100000] [--runs 51] [--out report.json]
// Default report: bench/results/query-<arch>-chromium<major>-<date>[-n].json. Needs `npm run build`.

import { startChromium } from './chromium.mjs';
import { generateRecipient } from '../dist/node.js';
import { hostInfo, saveReport, synsets, rng, reportPath, runtimeTag, rangeParams } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const RUNS = Number(arg('--runs', 51));

const records = synsets(N).map(({ id, value: v }) => [id, v.lemma, v.pos, v.gloss, v.offset]);
const params = rangeParams(
  records.map((r) => ({ pos: r[2], offset: r[4] })),
  RUNS,
  rng(11),
);
const r = generateRecipient();
const keys = { publicKey: Array.from(r.publicKey), secretKey: Array.from(r.secretKey) };

const { browser, base, close } = await startChromium();
try {
  const page = await browser.newPage();
  await page.goto(`${base}/bench`);
  await page.waitForFunction(() => 'pqdbBench' in globalThis);
  const { results, userAgent } = await page.evaluate((o) => globalThis.pqdbBench.query(o), { records, params, keys });
  const ratio = (peer, ours) => peer / ours;
  const report = {
    bench: 'query',
    host: hostInfo(),
    runtime: `chromium ${browser.version()}`,
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
  await close();
}
