// Every tab served (src/worker/tabs.ts, bridge.ts; docs/tabs.md), in Node with a lock manager and
// BroadcastChannel as a browser gives them to workers (support/tabs.ts): the tab whose worker takes
// the store's lock serves it; another tab's calls, watch and changes go through it once it proved a
// recipient key; a tab without one is refused; when the serving tab crashes or closes, a waiting tab
// serves, with every acknowledged write there and calls in flight failed with HANDOVER.
import { describe, it, expect, afterEach } from 'vitest';
import { generateRecipient, PqdbError } from '../src/node';
import { WorkerStore } from '../src/worker/client';
import type { Change } from '../src/engine/changes';
import { tabsOf } from './support/tabs';

const r = generateRecipient();
const stranger = generateRecipient();
const schema = { lemma: 'string', n: 'integer' } as const;
const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((f) => f()));

function origin() {
  const o = tabsOf();
  cleanups.push(o.closeAll);
  return o;
}

const openIn = (worker: Worker, key = r, create = true) =>
  WorkerStore.open({ worker, location: 'app', create, recipients: [r.publicKey], unlock: key.secretKey.slice() });

const until = async (what: () => boolean | Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('tabs of one origin', () => {
  it('the tab that takes the lock serves; another tab reads, writes and hears changes through it', async () => {
    const o = origin();
    const ta = o.open();
    const tb = o.open();
    const a = await openIn(ta.worker);
    expect(o.locks.holder('pqdb:app')).toBe(1);
    const b = await openIn(tb.worker, r, false);
    const ca = a.collection('w', { schema });
    const cb = b.collection('w', { schema });
    const heardByA: Change[] = [];
    const heardByB: Change[] = [];
    ca.watch((c) => heardByA.push(c));
    cb.watch((c) => heardByB.push(c), { prefix: 'a' });
    await cb.put('b1', { lemma: 'from b', n: 1 });
    expect(await ca.get('b1')).toEqual({ lemma: 'from b', n: 1 });
    await ca.put('a1', { lemma: 'from a', n: 2 });
    expect(await cb.get('a1')).toEqual({ lemma: 'from a', n: 2 });
    expect(await cb.count()).toBe(2);
    await until(() => heardByA.length === 2 && heardByB.length === 1);
    expect(heardByA.map((c) => c.ids)).toEqual([['b1'], ['a1']]);
    expect(heardByB.map((c) => c.ids)).toEqual([['a1']]);
    expect(o.locks.holder('pqdb:app')).toBe(1); // one writer
    expect(await b.recipientKeys()).toEqual([r.publicKey]);
    await b.close();
    await a.close();
    expect(o.locks.holder('pqdb:app')).toBeUndefined();
  });

  it('a context that watched a tab join cannot call the serving tab on the channels it saw', async () => {
    const o = origin();
    const a = await openIn(o.open().worker);
    const watcher = new BroadcastChannel('pqdb-tabs:app');
    const hellos: string[] = [];
    watcher.onmessage = (e) => e.data?.t === 'hello' && hellos.push(e.data.client);
    const b = await openIn(o.open().worker, r, false);
    await b.collection('w', { schema }).put('secret', { lemma: 'do not tell', n: 1 });
    expect(hellos.length).toBeGreaterThan(0);
    const replies: unknown[] = [];
    const taps = hellos.map((client) => {
      const ch = new BroadcastChannel(`pqdb-tabs:app:${client}`);
      ch.onmessage = (e) => replies.push(e.data);
      ch.postMessage({ t: 'open', id: 1, options: {} });
      ch.postMessage({ t: 'call', id: 2, target: 0, op: 'info', args: [] });
      return ch;
    });
    watcher.postMessage({ t: 'call', id: 3, target: 0, op: 'info', args: [] });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(replies).toEqual([]);
    taps.forEach((ch) => ch.close());
    watcher.close();
    await b.close();
    await a.close();
  });

  it('a put the serving tab committed before it crashed is given again to the next one and not applied twice', async () => {
    const o = origin();
    const [ta, tb] = [o.open(), o.open()];
    await openIn(ta.worker);
    const b = await openIn(tb.worker, r, false);
    const c = b.collection('w', { schema });
    await c.put('k', { lemma: 'v1', n: 1 });
    const before = (await b.info()).commit;
    // The serving tab commits the put, then dies instead of replying.
    ta.crashOnSend(
      (m) => (m as { t?: string; value?: unknown }).t === 'ok' && (m as { value?: unknown }).value === undefined,
    );
    await c.put('k', { lemma: 'v2', n: 2 });
    expect(await c.get('k')).toEqual({ lemma: 'v2', n: 2 });
    expect((await b.info()).commit).toBe(before + 1); // one commit: the retry was recognised
    await b.close();
  });

  it('a tab that was refused does not take the lock later; a forged server announcement moves nobody', async () => {
    const o = origin();
    const a = await openIn(o.open().worker);
    await expect(openIn(o.open().worker, stranger, false)).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    const b = await openIn(o.open().worker, r, false);
    const cb = b.collection('w', { schema });
    await cb.put('x', { lemma: 'x', n: 1 });
    // Anyone of the origin can post on the store's channel: the lock's holder did not change.
    const forger = new BroadcastChannel('pqdb-tabs:app');
    const deleting = cb.delete('x');
    forger.postMessage({ t: 'server' });
    expect(await deleting).toBe(true);
    forger.close();
    expect(o.locks.holder('pqdb:app')).toBe(1);
    await a.close(); // the refused tab's worker is not waiting for the lock: the served tab gets it
    await cb.put('y', { lemma: 'y', n: 2 });
    expect(o.locks.holder('pqdb:app')).toBe(3);
    await b.close();
  });

  it('two connections in the serving worker: when the first closes, the second serves', async () => {
    const o = origin();
    const t = o.open();
    const first = await openIn(t.worker);
    const second = await openIn(t.worker, r, false);
    const c2 = second.collection('w', { schema });
    await c2.put('k', { lemma: 'k', n: 1 });
    await first.close();
    await c2.put('after', { lemma: 'after', n: 2 });
    expect(await c2.count()).toBe(2);
    expect(o.locks.holder('pqdb:app')).toBe(1);
    await second.close();
    expect(o.locks.holder('pqdb:app')).toBeUndefined();
  });

  it('a tab without a recipient key of the store is refused: AUTH_FAILED', async () => {
    const o = origin();
    const a = await openIn(o.open().worker);
    await expect(openIn(o.open().worker, stranger, false)).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await a.close();
  });

  it('when the serving tab crashes, a waiting tab serves with every acknowledged write; calls in flight fail with HANDOVER', async () => {
    const o = origin();
    const ta = o.open();
    const tb = o.open();
    const tc = o.open();
    const a = await openIn(ta.worker);
    void a;
    const b = await openIn(tb.worker, r, false);
    const c = await openIn(tc.worker, r, false);
    const cb = b.collection('w', { schema });
    const cc = c.collection('w', { schema });
    for (let i = 0; i < 20; i++) await cb.put(`k${i}`, { lemma: 'acked', n: i });
    const inFlight = cc.put('maybe', { lemma: 'in flight', n: -1 }).then(
      () => 'ok',
      (e: unknown) => (e as PqdbError).code,
    );
    ta.crash();
    expect(await inFlight).toBe('ok'); // given to the next server with its request id
    // Calls after the crash wait for the next server and then go on.
    await cb.put('after', { lemma: 'after', n: 99 });
    expect(await cc.get('after')).toEqual({ lemma: 'after', n: 99 });
    for (let i = 0; i < 20; i++) expect(await cc.get(`k${i}`)).toEqual({ lemma: 'acked', n: i });
    const holder = o.locks.holder('pqdb:app');
    expect([2, 3]).toContain(holder);
    // The new server closes cleanly: the last tab serves.
    const [serving, other] = holder === 2 ? [b, c] : [c, b];
    await serving.close();
    const oc = other.collection('w', { schema });
    await oc.put('last', { lemma: 'last', n: 100 });
    expect(await oc.count()).toBeGreaterThanOrEqual(22);
    expect(o.locks.holder('pqdb:app')).toBe(holder === 2 ? 3 : 2);
    await other.close();
  });
});
