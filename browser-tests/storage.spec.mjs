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

test('PageStore conformance (opfs in a dedicated worker, Chromium)', async ({ page }) => {
  const errors = await openPage(page);
  expect(await page.evaluate(() => globalThis.pqdbStorage.inWorker(0, 'available'))).toBe(true);
  const s = await page.evaluate(() => globalThis.pqdbStorage.inWorker(0, 'conformance'));
  console.log(`[chromium] ${s.name}: ${s.passed}/${s.total} passed`);
  expect(s.failures).toEqual([]);
  expect(s.total).toBeGreaterThanOrEqual(30);
  expect(s.passed).toBe(s.total);
  expect(errors).toEqual([]);
});

test('OPFS: a second worker is LOCKED until the first closes or goes away; the page thread is UNSUPPORTED', async ({
  context,
}) => {
  const name = `lock-${Date.now()}`;
  const a = await context.newPage();
  const b = await context.newPage();
  const errors = [...(await openPage(a)), ...(await openPage(b))];
  const call = (p, op) => p.evaluate(([o, n]) => globalThis.pqdbStorage.inWorker(0, o, n), [op, name]);
  expect(await call(a, 'open')).toBe('opened');
  expect(await call(b, 'open')).toBe('LOCKED');
  expect(await b.evaluate(([n]) => globalThis.pqdbStorage.inWorker(1, 'open', n), [name])).toBe('LOCKED');
  expect(await call(b, 'remove')).toBe('LOCKED');
  expect(await call(a, 'close')).toBe('closed');
  expect(await call(b, 'open')).toBe('opened');
  // A tab that goes away (its worker with it) gives the handles back without closing the store.
  expect(await call(a, 'open')).toBe('LOCKED');
  await b.reload();
  await b.waitForFunction(() => 'pqdbStorage' in globalThis);
  await expect.poll(() => call(a, 'open')).toBe('opened');
  expect(await call(a, 'close')).toBe('closed');
  expect(await call(a, 'remove')).toBe('deleted');
  expect(await a.evaluate(() => globalThis.pqdbStorage.opfsOnPage())).toEqual({
    available: false,
    open: 'UNSUPPORTED',
  });
  expect(errors).toEqual([]);
});

for (const storage of ['opfs', 'indexeddb']) {
  test(`no plaintext on ${storage}: 10,000 records' ids, values and collection name are in none of its bytes`, async ({
    page,
  }) => {
    const errors = await openPage(page);
    const r = await page.evaluate((s) => globalThis.pqdbStorage.inWorker(0, 'plaintext', s), storage);
    console.log(
      `[chromium] ${storage}: ${r.bytes} bytes in ${r.files} files/values searched: ${JSON.stringify(r.found)}`,
    );
    expect(r.bytes).toBeGreaterThan(10_000 * 60);
    expect(r.controlHits).toBeGreaterThan(0);
    expect(r.found).toEqual({ 'acct-id-': 0, 'owner-name-': 0, 'plain-note-marker': 0, 'confidential-ledger': 0 });
    expect(errors).toEqual([]);
  });
}

for (const storage of ['opfs', 'indexeddb']) {
  test(`a full quota on ${storage} is QUOTA_EXCEEDED; every acknowledged put is kept and the store opens after`, async ({
    page,
    context,
  }) => {
    const errors = await openPage(page);
    const cdp = await context.newCDPSession(page);
    const origin = new URL(page.url()).origin;
    // The origin's usage now, plus room for a few hundred 4 KiB records.
    const { usage } = await page.evaluate(() => navigator.storage.estimate());
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + 2 * 1024 * 1024 });
    let r;
    try {
      r = await page.evaluate((s) => globalThis.pqdbStorage.inWorker(0, 'fill', s), storage);
    } finally {
      await cdp.send('Storage.overrideQuotaForOrigin', { origin }); // lifted
    }
    console.log(`[chromium] ${storage}: ${r.acked} puts acknowledged, then ${r.code}; close: ${r.closed}`);
    expect(r.code).toBe('QUOTA_EXCEEDED');
    expect(r.acked).toBeGreaterThan(10);
    const again = await page.evaluate((s) => globalThis.pqdbStorage.inWorker(0, 'refill', s), storage);
    expect(again).toEqual({ found: r.acked, after: 16 });
    expect(errors).toEqual([]);
  });
}

test('a storage attacker editing the OPFS files (old page put back, pages swapped, manifest rolled back…) is caught', async ({
  page,
}) => {
  const errors = await openPage(page);
  const s = await page.evaluate(() => globalThis.pqdbStorage.inWorker(0, 'tamper'));
  console.log(`[chromium] ${s.name}: ${s.passed}/${s.total} passed`);
  expect(s.failures).toEqual([]);
  expect(s.total).toBeGreaterThanOrEqual(9);
  expect(s.passed).toBe(s.total);
  expect(errors).toEqual([]);
});
