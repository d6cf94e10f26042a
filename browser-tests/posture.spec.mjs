// store.posture() on real IndexedDB in Chromium, through the bundled dist/browser.js: the CBOM of a
// store through its lifecycle (policy, two suites, a quarantine, a backup to a second database and
// its retirement), each validated in Node against the official CycloneDX 1.6 schema.
import { test, expect } from '@playwright/test';
import { validateCycloneDx } from '../node-tests/support/cyclonedx.ts';

test('store.posture() on IndexedDB (Chromium): every CBOM validates, and follows the store', async ({ page }) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/store');
  await page.waitForFunction(() => 'pqdbStore' in globalThis);
  const { boms, copyId, storage } = await page.evaluate(() => globalThis.pqdbStore.postures());
  expect(storage).toBe('indexeddb');
  for (const [step, bom] of Object.entries(boms)) {
    expect(validateCycloneDx(bom), step).toEqual([]);
    expect(bom.specVersion).toBe('1.6');
  }
  const text = (step) => JSON.stringify(boms[step]);
  // Counts per suite per collection, from the directory.
  expect(text('written')).toContain('"pqdb:records:gcmsiv-hkdf384","value":"5"');
  expect(text('written')).toContain('"pqdb:records:cnsa2-gcm-hkdf384-commit","value":"3"');
  // The quarantine is a suspended key state; the copy is a holder until it is retired.
  expect(text('written')).not.toContain('"suspended"');
  expect(text('quarantined')).toContain('"suspended"');
  expect(text('backedUp')).toContain(copyId);
  expect(text('retired')).not.toContain(copyId);
  console.log(`[chromium] posture: ${Object.keys(boms).length} CBOMs valid`);
  expect(errors).toEqual([]);
});
