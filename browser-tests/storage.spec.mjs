// The PageStore conformance suite inside Debian Chromium against the IndexedDB adapter (real
// IndexedDB, real Web Locks), plus the single-writer lock across two pages of one origin.
import { test, expect } from '@playwright/test';

async function openPage(browserPage) {
  const errors = [];
  browserPage.on('pageerror', (e) => errors.push(String(e)));
  await browserPage.goto('/storage');
  await browserPage.waitForFunction(() => 'pqdbStorage' in globalThis);
  return errors;
}

test('PageStore conformance (indexeddb, Chromium)', async ({ page }) => {
  const errors = await openPage(page);
  const s = await page.evaluate(() => globalThis.pqdbStorage.conformance());
  console.log(`[chromium] ${s.name}: ${s.passed}/${s.total} passed`);
  expect(s.failures).toEqual([]);
  expect(s.total).toBeGreaterThanOrEqual(15);
  expect(s.passed).toBe(s.total);
  expect(errors).toEqual([]);
});

test('a Web Lock keeps a second page (tab) out until the first closes or goes away', async ({ context }) => {
  const name = `pqdb-lock-${Date.now()}`;
  const a = await context.newPage();
  const b = await context.newPage();
  const errors = [...(await openPage(a)), ...(await openPage(b))];
  expect(await a.evaluate((n) => globalThis.pqdbStorage.open(n), name)).toBe('opened');
  const lock = await a.evaluate((n) => globalThis.pqdbStorage.lockName(n), name);
  expect(await b.evaluate(() => globalThis.pqdbStorage.heldLocks())).toContain(lock);
  expect(await b.evaluate((n) => globalThis.pqdbStorage.open(n), name)).toBe('LOCKED');
  // The refusal says who holds the store: another tab or worker.
  expect(await b.evaluate(() => globalThis.pqdbStorage.lastMessage())).toBe(
    `indexeddb page store "${name}" is held by another writer: another tab or worker of this origin (or another store in this page) has it open`,
  );
  await a.evaluate((n) => globalThis.pqdbStorage.close(n), name);
  expect(await b.evaluate((n) => globalThis.pqdbStorage.open(n), name)).toBe('opened');
  // A page that navigates away (or crashes) releases its lock without closing the store.
  expect(await a.evaluate((n) => globalThis.pqdbStorage.open(n), name)).toBe('LOCKED');
  await b.reload();
  await b.waitForFunction(() => 'pqdbStorage' in globalThis);
  await expect.poll(() => a.evaluate((n) => globalThis.pqdbStorage.open(n), name)).toBe('opened');
  await a.evaluate((n) => globalThis.pqdbStorage.close(n), name);
  expect(errors).toEqual([]);
});
