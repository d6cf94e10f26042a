// The browser bench's small variant (bench/browser.mjs runs the long one): every form it measures —
// pqdb in a worker on OPFS and on IndexedDB and on the page's thread, SQLite WASM's opfs-sahpool
// and wa-sqlite's AccessHandlePoolVFS in workers, Dexie — each sealed with AES-GCM and in clear,
// runs its single puts, a bulk ingest, gets and (pqdb) a migration on 1,000 WordNet synsets, and
// every get finds its record. No figure is asserted: speed is measured in bench/, not here.
import { test, expect } from '@playwright/test';
import { generateRecipient } from '../dist/node.js';
import { synsets } from '../bench/harness.mjs';

const MODES = [
  'pqdb-worker-opfs',
  'pqdb-worker-idb',
  'pqdb-main-idb',
  'sqlite-opfs-sahpool-aesgcm',
  'sqlite-opfs-sahpool',
  'wa-sqlite-opfs-ahp-aesgcm',
  'wa-sqlite-opfs-ahp',
  'dexie-aesgcm',
  'dexie',
];
const records = synsets(1000).map(({ id, value: v }) => [id, v.lemma, v.pos, v.gloss, v.offset]);
const r = generateRecipient();
const keys = { publicKey: Array.from(r.publicKey), secretKey: Array.from(r.secretKey) };

test('the browser bench: every form puts, ingests, reads back every record and (pqdb) migrates', async ({ page }) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/bench');
  await page.waitForFunction(() => 'pqdbBench' in globalThis);
  for (const mode of MODES) {
    const res = await page.evaluate((o) => globalThis.pqdbBench.run(o), {
      mode,
      records,
      puts: 5,
      reads: 100,
      batch: 500,
      migrate: mode.startsWith('pqdb'),
      keys,
    });
    expect(res.mode, mode).toBe(mode);
    expect(res.put.n, mode).toBe(5);
    expect(res.get.missing, `${mode}: gets that found nothing`).toBe(0);
    expect(res.ingest.recPerSec, mode).toBeGreaterThan(0);
    if (mode.startsWith('pqdb')) expect(res.migration, mode).toBeDefined();
    expect(res.form, mode).toMatch(mode.endsWith('aesgcm') ? /AES-256-GCM/ : /./);
  }
  expect(errors).toEqual([]);
});
