// Verifiable batches and search on real IndexedDB in Chromium, through the bundled dist/browser.js:
// the shared store cases the Node tests also run (node-tests/cases/proofs.ts and search.ts).
// Checkpoints persisted across reopen with valid ML-DSA-87 signatures, consistency proofs between
// every pair, sealed exports that verify and open and fail for flipped bits; search equal to a
// brute-force scan through puts, updates, deletes and reopen; a storage attacker editing the
// object stores directly (node-tests/cases/tamper.ts) gets a typed error or is caught by the pins;
// current authority at every gate (cases/authority.ts); backups to a second database, the inventory
// and restore under current authority and new keys (cases/copies.ts).
import { test, expect } from '@playwright/test';

const EXPECTED_CASES = { proofs: 4, search: 2, tamper: 9, authority: 6, copies: 5 };
/** Stores each case opens through its fixture at least (the first three suites reopen every store). */
const OPENS_PER_CASE = { proofs: 2, search: 2, tamper: 2, authority: 1, copies: 1 };

for (const suite of Object.keys(EXPECTED_CASES)) {
  test(`${suite} on IndexedDB (Chromium, dist/browser.js)`, async ({ page }) => {
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto('/store');
    await page.waitForFunction(() => 'pqdbStore' in globalThis);
    const { summary, storages, databases } = await page.evaluate((s) => globalThis.pqdbStore.run(s), suite);
    console.log(`[chromium] ${summary.name}: ${summary.passed}/${summary.total} passed`);
    expect(summary.failures).toEqual([]);
    expect(summary.total).toBe(EXPECTED_CASES[suite]);
    expect(summary.passed).toBe(summary.total);
    // Every case reopened its store at least once, each time on IndexedDB.
    expect(storages.length).toBeGreaterThanOrEqual(OPENS_PER_CASE[suite] * summary.total);
    expect(new Set(storages)).toEqual(new Set(['indexeddb']));
    // Each case removed its database.
    const left = await page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
    expect(left.filter((n) => databases.includes(n))).toEqual([]);
    expect(errors).toEqual([]);
  });
}
