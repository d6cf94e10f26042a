// The checks every browser engine's run makes (browser-tests/firefox.mjs, browser-tests/webkit.mjs),
// on the pages browser-tests/server.mjs serves: the known-answer page (every vector file, both
// builds), the page-store conformance suite on IndexedDB and, in a dedicated worker, on OPFS (the
// lock between workers, the tamper cases, no plaintext in the raw bytes), the shared store cases on
// IndexedDB, and the worker engine. A feature the engine lacks is reported as unavailable, by name.
import { workerRun, sealedVerifies } from '../worker-run.mjs';

const summary = (s) =>
  `${s.passed}/${s.total} passed${s.failures.length ? `; ${JSON.stringify(s.failures).slice(0, 2000)}` : ''}`;

/**
 * Runs the checks. `onPage(path, ready, body)` loads `path`, waits until `ready()` is true in the
 * page, then calls `body(page, errors)` where `page.evaluate(fn, arg)` runs `fn(arg)` in the page.
 */
export async function engineChecks({ onPage, tabs = true, report, unavailable }) {
  let opfsInWorkers = false;
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
      opfsInWorkers = opfs;
      if (!opfs) unavailable('OPFS sync access handles in a dedicated worker');
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
        const checks = {
          'page store': r.storage.pageStore === (storage === 'auto' && opfsInWorkers ? 'opfs' : 'indexeddb'),
          'no kernel on the page': r.instancesOnPage === 0,
          'key zeroed': r.keyWiped,
          scan: r.scanned === 3020,
          reopen: r.count === 3020,
          migration: r.migrated.total === 3020,
          search: r.hits.join() === 'w0000042',
          'sealed export': sealedVerifies(r.sealed, 'w0000042'),
        };
        const failed = Object.keys(checks).filter((k) => !checks[k]);
        const ok = failed.length === 0;
        report(
          `worker engine on ${r.storage.pageStore} (storage ${storage})`,
          ok,
          `3000 records in ${r.ingestMs.toFixed(0)} ms, put p50 ${r.putP50.toFixed(2)} ms, get p50 ${r.getP50.toFixed(3)} ms, ` +
            `${r.instancesOnPage} kernels on the page, longest task ${r.ingestLongTask.toFixed(0)} ms` +
            (ok ? '' : `; failed: ${failed.join(', ')}`),
        );
      }
      if (opfsInWorkers) {
        const m = await page.evaluate((o) => globalThis.pqdbWorker.move(o), workerRun('indexeddb', 0));
        report(
          'a store moved from IndexedDB to OPFS (backup, restoreStore({ worker }))',
          m.restored === 1000 && m.pageStore === 'opfs' && m.count === 1000 && m.instancesOnPage === 0,
          JSON.stringify({ restored: m.restored, pageStore: m.pageStore, count: m.count }),
        );
      }
      report('worker page: no page errors', errors.length === 0, errors.join('; '));
    },
  );

  // Two tabs, one store (docs/tabs.md): the first serves, the second is served, hears the first's
  // changes and serves once the first tab closes. `onPage` nested opens a second tab while the
  // first is open, where the driver has tabs.
  if (!tabs) return unavailable('two tabs at once in this driver');
  const o = workerRun('auto', 0);
  await onPage(
    '/worker',
    () => 'pqdbWorker' in globalThis,
    async (b, errorsB) => {
      let served;
      await onPage(
        '/worker',
        () => 'pqdbWorker' in globalThis,
        async (a, errorsA) => {
          await a.evaluate((x) => globalThis.pqdbWorker.tabOpen(x), o);
          await b.evaluate((x) => globalThis.pqdbWorker.tabOpen(x), o);
          for (let i = 0; i < 10; i++) await b.evaluate((i) => globalThis.pqdbWorker.tabPut(`b${i}`, 'from b'), i);
          await a.evaluate(() => globalThis.pqdbWorker.tabPut('a0', 'from a'));
          const read = await a.evaluate(() => globalThis.pqdbWorker.tabGet('b7'));
          const until = Date.now() + 5000;
          let heard = 0;
          while (Date.now() < until && (heard = await b.evaluate(() => globalThis.pqdbWorker.tabHeard().length)) < 11)
            await new Promise((resolve) => setTimeout(resolve, 20));
          served = {
            read: read?.gloss,
            heard,
            errors: errorsA.length,
            heardByA: await a.evaluate(() => globalThis.pqdbWorker.tabHeard().length),
          };
        },
      );
      // The serving tab closed: the second takes the store over.
      const after = await b.evaluate(() => globalThis.pqdbWorker.tabPut('after', 'served by b'));
      const count = await b.evaluate(() => globalThis.pqdbWorker.tabCount());
      await b.evaluate(() => globalThis.pqdbWorker.tabClose());
      report(
        'two tabs, one store: served through the first, changes heard, handed over when it closes',
        served.read === 'from b' &&
          served.heard === 11 &&
          served.heardByA === 11 &&
          typeof after.at === 'number' &&
          count === 12,
        JSON.stringify({ ...served, after: after.code ?? 'ok', count }),
      );
      report('tab pages: no page errors', errorsB.length === 0 && served.errors === 0, errorsB.join('; '));
    },
  );
}
