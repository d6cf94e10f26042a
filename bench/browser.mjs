// The browser bench: pqdb in the forms an app embeds it (in a dedicated worker on OPFS, in a worker
// on IndexedDB, on the page's thread on IndexedDB) beside the peers that install from npm (the
// official SQLite WASM build on OPFS through opfs-sahpool, and wa-sqlite on OPFS through its
// AccessHandlePoolVFS, each in a worker; Dexie on IndexedDB), each peer
// once with its values sealed by WebCrypto AES-256-GCM and once in clear, in Chromium and Firefox
// ESR, all in one run. Measured per form (browser-tests/page/bench.ts): durable single puts (p50,
// p99), a bulk ingest of WordNet 3.1 synsets in batches of 1,000, random gets, the page thread's long
// tasks during the ingest and, for pqdb, during a migration of every record; for pqdb in a worker,
// the same get timed inside the worker (the RPC's cost) and the worker's JS heap (Chromium), and the
// first read after a page load on the ingested store (warm HTTP caches: the median of five loads after the first), and the
// worker's heap after opening a store of 1M records (Chromium).
//
//   node bench/browser.mjs [--records 100000] [--puts 200] [--reads 5000] [--engines chromium,firefox]
//                          [--modes pqdb-worker-opfs,…] [--heap-records 100000,1000000] [--out report.json]
// Default report: bench/results/browser-<arch>-browsers-<date>[-n].json. Needs `npm run build`.

import puppeteer from 'puppeteer-core';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from './migration/common.mjs';
import { launchChromiumProfile } from './chromium.mjs';
import { generateRecipient } from '../dist/node.js';
import { hostInfo, saveReport, synsets } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const PUTS = Number(arg('--puts', 200));
const READS = Number(arg('--reads', 5000));
const ENGINES = arg('--engines', 'chromium,firefox').split(',');
const HEAP = arg('--heap-records', '1000000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const MODES = arg(
  '--modes',
  'pqdb-worker-opfs,pqdb-worker-idb,pqdb-main-idb,sqlite-opfs-sahpool-aesgcm,sqlite-opfs-sahpool,wa-sqlite-opfs-ahp-aesgcm,wa-sqlite-opfs-ahp,dexie-aesgcm,dexie',
)
  .split(',')
  .filter((m) => m !== '' && m !== 'none');
const KNOWN =
  /^(pqdb-worker-opfs|pqdb-worker-idb|pqdb-main-idb|sqlite-opfs-sahpool(-aesgcm)?|wa-sqlite-opfs-ahp(-aesgcm)?|dexie(-aesgcm)?)$/;
for (const m of MODES) if (!KNOWN.test(m)) throw new RangeError(`--modes: unknown form "${m}"`);

// As [id, lemma, pos, gloss, offset]: the page gets them in one structured clone.
const records = synsets(N).map(({ id, value: v }) => [id, v.lemma, v.pos, v.gloss, v.offset]);
const bytes = records.reduce((n, r) => n + r[0].length + r[1].length + r[2].length + r[3].length + 8, 0);
console.log(`${records.length} WordNet synsets, ${(bytes / records.length).toFixed(0)} bytes a record on average`);

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
const base = `http://127.0.0.1:${port}`;

/** A driver per engine: newPage() → { goto, ready, evaluate, close }. */
async function launch(engine) {
  if (engine === 'chromium') {
    // A profile on disk (chromium.mjs says why). Memory measured at once
    // (performance.measureUserAgentSpecificMemory otherwise waits for a GC).
    const chrome = await launchChromiumProfile(['--enable-blink-features=ForceEagerMeasureMemory']);
    const context = chrome.context;
    const version = chrome.browser.version();
    return {
      version,
      newPage: async () => {
        const page = await context.newPage();
        return {
          goto: (path) => page.goto(`${base}${path}`),
          ready: (what = 'pqdbBench') => page.waitForFunction((w) => w in globalThis, what),
          evaluate: (fn, a) => page.evaluate(fn, a),
          close: () => page.close(),
        };
      },
      close: () => chrome.close(),
    };
  }
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr',
    headless: true,
  });
  return {
    version: await browser.version(),
    newPage: async () => {
      const page = await browser.newPage();
      return {
        goto: (path) => page.goto(`${base}${path}`),
        ready: (what = 'pqdbBench') => page.waitForFunction((w) => w in globalThis, { timeout: 60_000 }, what),
        evaluate: (fn, a) => page.evaluate(fn, a),
        close: () => page.close(),
      };
    },
    close: () => browser.close(),
  };
}

const fmt = (x, d = 2) => (x === undefined ? '—' : x.toFixed(d));
const report = { host: hostInfo(), records: records.length, bytesPerRecord: bytes / records.length, engines: {} };
try {
  for (const engine of ENGINES) {
    const d = await launch(engine);
    const out = { version: d.version, runs: [] };
    report.engines[engine] = out;
    console.log(`\n${engine} ${d.version}`);
    const page = await d.newPage();
    await page.goto('/bench');
    await page.ready();
    for (const mode of MODES) {
      try {
        const res = await page.evaluate((o) => globalThis.pqdbBench.run(o), {
          mode,
          records,
          puts: PUTS,
          reads: READS,
          batch: 1000,
          migrate: mode.startsWith('pqdb'),
          keys,
        });
        out.runs.push(res);
        console.log(
          `${mode.padEnd(28)} put p50 ${fmt(res.put.p50)} p99 ${fmt(res.put.p99)} ms | ingest ${res.ingest.recPerSec.toFixed(0)} rec/s` +
            ` (long tasks ${res.ingest.longTasks.count}, max ${fmt(res.ingest.longTasks.maxMs, 0)} ms)` +
            ` | get p50 ${fmt(res.get.p50, 3)} ms, ${res.get.recPerSec.toFixed(0)} rec/s` +
            (res.rpc
              ? ` (reopened: in the worker ${fmt(res.rpc.inWorkerP50, 3)}, through it ${fmt(res.rpc.throughWorkerP50, 3)} ms)`
              : '') +
            (res.migration
              ? ` | migration ${(res.migration.ms / 1000).toFixed(1)} s (long tasks ${res.migration.longTasks.count}, max ${fmt(res.migration.longTasks.maxMs, 0)} ms)`
              : '') +
            (res.heapAfterIngest ? ` | worker heap ${(res.heapAfterIngest / 2 ** 20).toFixed(1)} MiB` : ''),
        );
      } catch (e) {
        out.runs.push({ mode, error: String(e?.message ?? e) });
        console.log(`${mode.padEnd(28)} failed: ${String(e?.message ?? e).slice(0, 300)}`);
      }
    }
    await page.close();
    // The first read after a page load on a store of the records, ingested in a worker on OPFS (and
    // not migrated: an open after a migration replays its copy commits, reported with the runs).
    const opfs =
      MODES.includes('pqdb-worker-opfs') &&
      (await (async () => {
        const p = await d.newPage();
        await p.goto('/bench');
        await p.ready();
        const made = await p.evaluate((o) => globalThis.pqdbBench.run(o), {
          mode: 'pqdb-worker-opfs',
          records,
          puts: 0,
          reads: 0,
          batch: 1000,
          migrate: false,
          keys,
        });
        await p.close();
        return made;
      })());
    if (opfs) {
      const loads = [];
      const key = Buffer.from(keys.secretKey).toString('hex');
      for (let i = 0; i < 6; i++) {
        const p = await d.newPage();
        const id = records[records.length >> 1][0];
        await p.goto(
          `/first#name=${encodeURIComponent(opfs.name)}&storage=opfs&key=${key}&id=${encodeURIComponent(id)}`,
        );
        await p.ready('firstRead');
        loads.push(await p.evaluate(() => globalThis.firstRead));
        await p.close();
      }
      const warm = loads.slice(1).map((l) => l.ms);
      out.firstRead = { loads, warm, warmMedian: [...warm].sort((a, b) => a - b)[warm.length >> 1] };
      console.log(
        `first read after a page load (pqdb-worker-opfs, ${records.length} records): ${loads.map((l) => `${l.ms.toFixed(0)} ms (script at ${l.scriptStart.toFixed(0)}, worker and open ${l.openMs.toFixed(0)}, get ${l.getMs.toFixed(0)})`).join(', ')}; the first load is cold, the median of the others ${out.firstRead.warmMedian.toFixed(0)} ms`,
      );
    }
    // The worker's heap after opening a store of 100k and of 1M records (Chromium measures it).
    if (engine === 'chromium')
      for (const n of HEAP) {
        const p = await d.newPage();
        await p.goto('/bench');
        await p.ready();
        const h = await p.evaluate((o) => globalThis.pqdbBench.heapAfterOpen(o), { n, keys });
        await p.close();
        (out.heapAfterOpen ??= []).push(h);
        console.log(
          `worker heap after opening ${n} records on OPFS: ${(h.heap / 2 ** 20).toFixed(1)} MiB (open and first get ${h.openMs.toFixed(0)} ms; ingest ${(n / (h.ingestMs / 1000)).toFixed(0)} rec/s)`,
        );
      }
    await d.close();
  }
} finally {
  server.kill();
}
const path = saveReport('browser', report, arg('--out'), { runtime: 'browsers' });
console.log(`\nreport: ${path}`);
