// Handovers between tabs (docs/tabs.md), shared by browser-tests/tabs.spec.mjs (20 of them) and
// bench/tabs.mjs (200): `tabs` tabs open one store; in each round every tab but the serving one puts
// a record, the serving tab is closed while those puts are on their way, a new tab opens, and the
// tab next in the lock's queue serves. What it measures: from the close to the first put the next
// server acknowledges, and how long each put in flight took to settle; what it checks at the end:
// every acknowledged put is there, once (one commit each), and the lock changed hands every round.
import { workerRun } from './worker-run.mjs';

async function tab(context, o, base) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${base}/worker`);
  await page.waitForFunction(() => 'pqdbWorker' in globalThis);
  await page.evaluate((x) => globalThis.pqdbWorker.tabOpen(x), o);
  return { page, errors };
}

/** Who holds the store's lock now (a client id of the browser's), seen from `page`. */
const holder = (page, name) =>
  page.evaluate(async (n) => (await navigator.locks.query()).held.find((l) => l.name === n)?.clientId, name);

/** `base`: the test server's origin ('' where the context has a base URL, as Playwright's tests). */
export async function handovers(context, rounds, { tabs = 3, storage = 'auto', base = '' } = {}) {
  const o = workerRun(storage, 0);
  const open = [];
  for (let i = 0; i < tabs; i++) open.push(await tab(context, o, base));
  const acked = new Set();
  const failed = {};
  const handoverMs = [];
  const settleMs = [];
  const commitsBefore = (await open[0].page.evaluate(() => globalThis.pqdbWorker.tabInfo())).commit;
  let lastHolder = await holder(open[1].page, `pqdb:${o.name}`);
  for (let r = 0; r < rounds; r++) {
    const [serving, ...others] = open;
    // Puts from every other tab, sent as the serving tab closes.
    const puts = others.map((t, i) => {
      const id = `r${r}-t${i}`;
      const sent = Date.now();
      return t.page
        .evaluate(([id]) => globalThis.pqdbWorker.tabPut(id, 'in flight'), [id])
        .then((x) => {
          settleMs.push(Date.now() - sent);
          if (x.at !== undefined) acked.add(id);
          else failed[x.code] = (failed[x.code] ?? 0) + 1;
        });
    });
    const closed = Date.now();
    await serving.page.close();
    open.shift();
    const first = await others[0].page.evaluate(
      ([id]) => globalThis.pqdbWorker.tabPut(id, 'after the close'),
      [`r${r}-after`],
    );
    if (first.at !== undefined) acked.add(`r${r}-after`);
    handoverMs.push(Math.round(first.at - closed));
    await Promise.all(puts);
    const now = await holder(others[0].page, `pqdb:${o.name}`);
    if (now === lastHolder || now === undefined) throw new Error(`round ${r}: the lock did not change hands`);
    lastHolder = now;
    open.push(await tab(context, o, base));
  }
  const last = open[0].page;
  const count = await last.evaluate(() => globalThis.pqdbWorker.tabCount());
  const missing = [];
  for (const id of acked)
    if ((await last.evaluate((i) => globalThis.pqdbWorker.tabGet(i), id)) === undefined) missing.push(id);
  const info = await last.evaluate(() => globalThis.pqdbWorker.tabInfo());
  for (const t of open) await t.page.evaluate(() => globalThis.pqdbWorker.tabClose());
  const errors = open.flatMap((t) => t.errors);
  for (const t of open) await t.page.close();
  const sorted = (xs) => [...xs].sort((a, b) => a - b);
  const pct = (xs, p) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
  return {
    rounds,
    tabs,
    acked: acked.size,
    failed,
    count,
    missing,
    // One commit per acknowledged put (and one for the store's creation): none applied twice.
    commits: info.commit - commitsBefore,
    appliedTwice: info.commit - commitsBefore - acked.size,
    handoverMs: { p50: pct(handoverMs, 0.5), p99: pct(handoverMs, 0.99), max: Math.max(...handoverMs) },
    settleMs: { p50: pct(settleMs, 0.5), p99: pct(settleMs, 0.99), max: Math.max(...settleMs) },
    errors,
  };
}
