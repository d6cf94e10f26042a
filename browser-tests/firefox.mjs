// The browser suites in Firefox ESR (Debian's firefox-esr), driven by puppeteer-core over WebDriver
// BiDi (Playwright drives only its own patched Firefox). The same pages Playwright drives in
// Chromium (browser-tests/server.mjs): the known-answer page (every vector file, both builds), the
// page-store conformance suite on IndexedDB and on OPFS in a dedicated worker, the shared store
// cases (proofs, search, tamper, authority, copies) on IndexedDB, and the worker engine on OPFS.
// A feature the engine lacks is reported as unavailable, by name, never skipped silently.
// navigator.storage.persist() is never called: under automation it closes the tab.
// Usage: node browser-tests/firefox.mjs   (after npm run build; FIREFOX_PATH overrides the binary)

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { workerRun, sealedVerifies } from './worker-run.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const executablePath = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
const port = Number(process.env.PQDB_FIREFOX_PORT ?? 41741);
const base = `http://127.0.0.1:${port}`;

if (!existsSync(executablePath)) {
  console.log(`firefox: ${executablePath} is missing (apt-get install firefox-esr; .ci/run installs it)`);
  process.exit(1);
}

const server = spawn(process.execPath, [join(here, 'server.mjs'), String(port)], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise((resolve, reject) => {
  server.stdout.on('data', (d) => String(d).includes('pqdb test page') && resolve());
  server.on('exit', (code) => reject(new Error(`the test server exited (${code})`)));
});

const results = { passed: 0, failed: 0, unavailable: [] };
function report(name, ok, detail = '') {
  console.log(`[firefox] ${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
  if (ok) results.passed++;
  else results.failed++;
}
const summary = (s) =>
  `${s.passed}/${s.total} passed${s.failures.length ? `; ${JSON.stringify(s.failures).slice(0, 2000)}` : ''}`;

const browser = await puppeteer.launch({ browser: 'firefox', executablePath, headless: true });
const version = await browser.version();
console.log(`[firefox] ${version}`);

async function onPage(path, ready, fn) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    await page.goto(`${base}${path}`);
    await page.waitForFunction(ready, { timeout: 300_000, polling: 200 });
    return await fn(page, errors);
  } finally {
    await page.close();
  }
}

try {
  await onPage(
    '/kat',
    () => 'katResult' in globalThis,
    async (page, errors) => {
      const result = await page.evaluate(() => globalThis.katResult);
      if (result.error !== undefined) return report('known-answer page', false, String(result.error));
      for (const r of result) {
        const cases = r.suites.reduce((n, s) => n + s.passed, 0);
        const failed = r.suites.reduce((n, s) => n + s.failures.length, 0);
        report(
          `known-answer page (${r.flavor})`,
          r.problems.length === 0 && failed === 0 && r.suites.length >= 17,
          `${r.suites.length} vector files, ${cases} cases passed, ${failed} failed${r.problems.length ? `; ${r.problems.join('; ')}` : ''}`,
        );
      }
      report('known-answer page: no page errors', errors.length === 0, errors.join('; '));
    },
  );

  await onPage(
    '/storage',
    () => 'pqdbStorage' in globalThis,
    async (page, errors) => {
      const idb = await page.evaluate(() => globalThis.pqdbStorage.conformance());
      report(`page-store conformance (${idb.name})`, idb.passed === idb.total && idb.total >= 30, summary(idb));
      const opfs = await page.evaluate(() => globalThis.pqdbStorage.inWorker(0, 'available'));
      if (!opfs) results.unavailable.push('OPFS sync access handles in a dedicated worker');
      else {
        const s = await page.evaluate(() => globalThis.pqdbStorage.inWorker(0, 'conformance'));
        report(`page-store conformance (${s.name})`, s.passed === s.total && s.total >= 30, summary(s));
        const name = `lock-${Date.now()}`;
        const codes = await page.evaluate(async (n) => {
          const w = globalThis.pqdbStorage.inWorker;
          const out = [await w(0, 'open', n), await w(1, 'open', n), await w(0, 'close', n), await w(1, 'open', n)];
          out.push(await w(1, 'close', n), await w(1, 'remove', n));
          return out;
        }, name);
        const t = await page.evaluate(() => globalThis.pqdbStorage.inWorker(0, 'tamper'));
        report(t.name, t.passed === t.total && t.total >= 9, summary(t));
        report(
          'OPFS: a second worker is LOCKED until the first closes',
          codes.join() === 'opened,LOCKED,closed,opened,closed,deleted',
          codes.join(),
        );
      }
      for (const storage of opfs ? ['opfs', 'indexeddb'] : ['indexeddb']) {
        const r = await page.evaluate((s) => globalThis.pqdbStorage.inWorker(0, 'plaintext', s), storage);
        const none = Object.values(r.found).every((n) => n === 0);
        report(
          `no plaintext on ${storage} (10,000 records)`,
          none && r.controlHits > 0 && r.bytes > 600_000,
          `${r.bytes} bytes searched: ${JSON.stringify(r.found)}`,
        );
      }
      const onPageThread = await page.evaluate(() => globalThis.pqdbStorage.opfsOnPage());
      report(
        'OPFS on the page thread is UNSUPPORTED',
        onPageThread.open === 'UNSUPPORTED',
        JSON.stringify(onPageThread),
      );
      report('storage page: no page errors', errors.length === 0, errors.join('; '));
    },
  );

  await onPage(
    '/store',
    () => 'pqdbStore' in globalThis,
    async (page, errors) => {
      const names = await page.evaluate(() => globalThis.pqdbStore.names);
      for (const name of names) {
        const r = await page.evaluate((n) => globalThis.pqdbStore.run(n), name);
        const stored = r.storages.every((s) => s === 'indexeddb');
        report(
          `store cases: ${r.summary.name}`,
          r.summary.passed === r.summary.total && r.summary.total > 0 && stored,
          summary(r.summary),
        );
      }
      report('store page: no page errors', errors.length === 0, errors.join('; '));
    },
  );

  await onPage(
    '/worker',
    () => 'pqdbWorker' in globalThis,
    async (page, errors) => {
      for (const storage of ['auto', 'indexeddb']) {
        const r = await page.evaluate((o) => globalThis.pqdbWorker.run(o), workerRun(storage));
        const ok =
          r.storage.pageStore === (storage === 'auto' ? 'opfs' : 'indexeddb') &&
          r.instancesOnPage === 0 &&
          r.keyWiped &&
          r.scanned === 3020 &&
          r.count === 3020 &&
          r.migrated.total === 3020 &&
          r.hits.join() === 'w0000042' &&
          sealedVerifies(r.sealed, 'w0000042');
        report(
          `worker engine on ${r.storage.pageStore} (storage ${storage})`,
          ok,
          `3000 records in ${r.ingestMs.toFixed(0)} ms, put p50 ${r.putP50.toFixed(2)} ms, get p50 ${r.getP50.toFixed(3)} ms, ` +
            `${r.instancesOnPage} kernels on the page, longest task ${r.ingestLongTask.toFixed(0)} ms`,
        );
      }
      report('worker page: no page errors', errors.length === 0, errors.join('; '));
    },
  );
} catch (e) {
  report('the Firefox run', false, String(e?.stack ?? e));
} finally {
  await browser.close();
  server.kill();
}

for (const u of results.unavailable) console.log(`[firefox] unavailable in ${version}: ${u}`);
console.log(
  `firefox: ${results.passed} passed, ${results.failed} failed, ${results.unavailable.length} features unavailable`,
);
process.exit(results.failed > 0 ? 1 : 0);
