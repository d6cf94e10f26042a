// The worker engine in Debian Chromium: a store opened with openStore({ worker }) from the built
// package runs in a dedicated worker, on OPFS ('auto' picks it there) and on IndexedDB. The page's
// thread instantiates no WebAssembly kernel (nothing is sealed, opened or signed on it), its key is
// wiped, errors keep their codes, a reopen finds every record, and a sealed export verifies.
import { test, expect } from '@playwright/test';
import { workerRun, sealedVerifies } from './worker-run.mjs';

async function openPage(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/worker');
  await page.waitForFunction(() => 'pqdbWorker' in globalThis);
  return errors;
}

for (const storage of ['auto', 'indexeddb']) {
  test(`a store in a dedicated worker (storage ${storage}): the API, no kernel on the page, a reopen`, async ({
    page,
  }) => {
    const errors = await openPage(page);
    const r = await page.evaluate((o) => globalThis.pqdbWorker.run(o), workerRun(storage));
    console.log(
      `[chromium worker, ${r.storage.pageStore}] 3000 records in ${r.ingestMs.toFixed(0)} ms, put p50 ${r.putP50.toFixed(2)} ms / p99 ${r.putP99.toFixed(2)} ms, get p50 ${r.getP50.toFixed(3)} ms, longest task ${r.ingestLongTask.toFixed(0)} / ${r.migrationLongTask.toFixed(0)} ms`,
    );
    expect(r.storage.pageStore).toBe(storage === 'auto' ? 'opfs' : 'indexeddb');
    expect(r.info.storage).toBe(r.storage.pageStore);
    expect(typeof r.storage.persisted).toBe('boolean');
    expect(r.storage.estimate.quota).toBeGreaterThan(0);
    expect(r.instancesOnPage).toBe(0);
    expect(r.keyWiped).toBe(true);
    expect(r.scanned).toBe(3020);
    expect(r.hits).toEqual(['w0000042']);
    expect(r.checkpointSize).toBeGreaterThan(0);
    expect(sealedVerifies(r.sealed, 'w0000042')).toBe(true);
    expect(r.progress).toBeGreaterThan(0);
    expect(r.migrated.total).toBe(3020);
    expect(r.count).toBe(3020);
    expect(r.first).toEqual({ lemma: 'lemma1', gloss: 'the gloss of word 1' });
    expect(errors).toEqual([]);
  });
}

test('a bad value in a worker store (opened through pqdb/client) is the PqdbError SCHEMA_MISMATCH on the page', async ({
  page,
}) => {
  const errors = await openPage(page);
  const got = await page.evaluate((o) => globalThis.pqdbWorker.failure(o), workerRun('auto', 0));
  expect(got).toBe('PqdbError SCHEMA_MISMATCH');
  expect(errors).toEqual([]);
});

test('a store moves from IndexedDB to OPFS through the worker engine: backup, then restoreStore({ worker }) from pqdb/client', async ({
  page,
}) => {
  const errors = await openPage(page);
  const r = await page.evaluate((o) => globalThis.pqdbWorker.move(o), workerRun('indexeddb', 0));
  expect(r.restored).toBe(1000);
  expect(r.pageStore).toBe('opfs');
  expect(r.count).toBe(1000);
  expect(r.sample).toEqual({ lemma: 'lemma999', gloss: 'moved' });
  expect(r.instancesOnPage).toBe(0);
  expect(errors).toEqual([]);
});

test('change notifications from the worker engine reach the page: a prefix heard, an untouched one not, a live get', async ({
  page,
}) => {
  const errors = await openPage(page);
  const r = await page.evaluate((o) => globalThis.pqdbWorker.changes(o), { ...workerRun('auto', 0), singlePuts: 40 });
  console.log(
    `[chromium worker] a change heard on the page ${r.lagP50.toFixed(2)} ms p50 / ${r.lagP95.toFixed(2)} ms p95 after its put was acknowledged (negative: before)`,
  );
  expect(r.heard).toBe(40);
  expect(r.lastCommit).toBe(r.commit - 1); // the put of 'other' was not heard
  expect(r.untouched).toBe(0);
  expect(r.live).toBe(2); // before p/7 was written, and once after
  expect(errors).toEqual([]);
});
