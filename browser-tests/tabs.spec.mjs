// Every tab served, in Debian Chromium (docs/tabs.md): two tabs of one origin open the same store in
// their dedicated workers; the first takes the store's Web Lock and serves it on OPFS, the second's
// calls and its listener go through it over BroadcastChannel; closing the serving tab hands the store
// to the other, which then serves every acknowledged write.
import { test, expect } from '@playwright/test';
import { workerRun } from './worker-run.mjs';
import { handovers } from './tabs-run.mjs';

async function tabPage(context) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/worker');
  await page.waitForFunction(() => 'pqdbWorker' in globalThis);
  return { page, errors };
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

test('two tabs, one store: the second is served by the first, hears its changes, and serves once the first closes', async ({
  context,
}) => {
  const a = await tabPage(context);
  const b = await tabPage(context);
  const o = workerRun('auto', 0);
  expect(await a.page.evaluate((x) => globalThis.pqdbWorker.tabOpen(x), o)).toBe(
    o.storage === 'auto' ? 'opfs' : 'indexeddb',
  );
  expect(await b.page.evaluate((x) => globalThis.pqdbWorker.tabOpen(x), o)).toBe(
    o.storage === 'auto' ? 'opfs' : 'indexeddb',
  ); // the server's
  // Writes from either tab, read from the other; each tab hears the other's.
  const acked = [];
  for (let i = 0; i < 20; i++)
    acked.push({ id: `b${i}`, ...(await b.page.evaluate((i) => globalThis.pqdbWorker.tabPut(`b${i}`, 'from b'), i)) });
  expect(acked.every((x) => typeof x.at === 'number')).toBe(true);
  await a.page.evaluate(() => globalThis.pqdbWorker.tabPut('a0', 'from a'));
  expect(await a.page.evaluate(() => globalThis.pqdbWorker.tabGet('b7'))).toEqual({ lemma: 'b7', gloss: 'from b' });
  expect(await b.page.evaluate(() => globalThis.pqdbWorker.tabGet('a0'))).toEqual({ lemma: 'a0', gloss: 'from a' });
  await expect.poll(() => a.page.evaluate(() => globalThis.pqdbWorker.tabHeard().length)).toBe(21);
  await expect.poll(() => b.page.evaluate(() => globalThis.pqdbWorker.tabHeard().length)).toBe(21);
  const heardByA = await a.page.evaluate(() => globalThis.pqdbWorker.tabHeard());
  const lag = acked.map((x, i) => heardByA[i].at - x.at);
  expect(heardByA.slice(0, 20).map((h) => h.ids[0])).toEqual(acked.map((x) => x.id));
  console.log(
    `[chromium tabs] a change heard in the serving tab ${pct(lag, 0.5).toFixed(2)} ms p50 / ${pct(lag, 0.95).toFixed(2)} ms p95 after the other tab's put was acknowledged (negative: before)`,
  );

  // The serving tab closes: the other takes the lock, opens the store and serves.
  const closed = Date.now();
  await a.page.close();
  // A put sent while the closing tab's worker was still there is given to the next server (its request id).
  const after = await b.page.evaluate(() => globalThis.pqdbWorker.tabPut('after', 'served by b'));
  console.log(
    `[chromium tabs] the first put after the serving tab closed: acknowledged ${(after.at - closed).toFixed(0)} ms after the close`,
  );
  expect(typeof after.at).toBe('number');
  expect(await b.page.evaluate(() => globalThis.pqdbWorker.tabCount())).toBe(22);
  expect(await b.page.evaluate(() => globalThis.pqdbWorker.tabGet('b19'))).toEqual({ lemma: 'b19', gloss: 'from b' });
  await b.page.evaluate(() => globalThis.pqdbWorker.tabClose());
  expect(a.errors).toEqual([]);
  expect(b.errors).toEqual([]);
});

test('20 handovers between three tabs: every acknowledged put there once, every call in flight settled', async ({
  context,
}) => {
  test.setTimeout(180_000);
  const r = await handovers(context, 20, { tabs: 3 });
  console.log(
    `[chromium tabs] ${r.rounds} handovers: the next server's first put ${r.handoverMs.p50} ms p50 / ${r.handoverMs.p99} ms p99 after the close; puts in flight settled in ${r.settleMs.p50} ms p50 / ${r.settleMs.max} ms max; ${r.acked} acknowledged, ${JSON.stringify(r.failed)} failed`,
  );
  expect(r.missing).toEqual([]);
  expect(r.count).toBe(r.acked);
  expect(r.appliedTwice).toBe(0);
  expect(r.failed).toEqual({}); // puts carry request ids: given to the next server
  expect(r.errors).toEqual([]);
});
