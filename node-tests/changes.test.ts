// Change notifications (src/engine/changes.ts, docs/changes.md) on a memory store: collection.watch
// with and without id and prefix filters, store.changes() as an async iterator (order, filters,
// ending by break, abort and close), live queries re-run only when what they read changes, and a
// migration's copies heard as no change.
import { describe, it, expect } from 'vitest';
import { generateRecipient, openStore, openMemoryPageStore, type Change, type Store } from '../src/index';
import { filterChange } from '../src/engine/changes';
import { engineOf } from '../src/engine/store';
import { checkManifest } from '../src/engine/manifest/checks';

const r = generateRecipient('classical');
const schema = { n: 'integer', s: 'string' } as const;
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

async function fresh(): Promise<Store> {
  return openStore({
    storage: await openMemoryPageStore(),
    create: true,
    recipients: [r.publicKey],
    unlock: r.secretKey,
  });
}

describe('change notifications', () => {
  it('watch hears each durable commit of its collection with the commit number and ids, never values', async () => {
    const s = await fresh();
    const a = s.collection('a', { schema });
    const b = s.collection('b', { schema });
    const heard: Change[] = [];
    const stop = a.watch((c) => heard.push(c));
    await a.put('x', { n: 1, s: 'one' });
    const afterPut = s.info().commit;
    await b.put('y', { n: 2, s: 'two' }); // another collection: not heard
    await s.batch((tx) => {
      tx.put(a, 'p', { n: 3, s: 'three' });
      tx.put(b, 'q', { n: 4, s: 'four' });
      tx.put(a, 'x', { n: 5, s: 'five' });
      tx.delete(a, 'p');
    });
    const afterBatch = s.info().commit;
    await a.delete('x');
    await a.delete('absent'); // nothing committed
    await tick();
    expect(heard).toEqual([
      { commit: afterPut, collection: 'a', ids: ['x'] },
      { commit: afterBatch, collection: 'a', ids: ['p', 'x'] },
      { commit: afterBatch + 1, collection: 'a', ids: ['x'] },
    ]);
    expect(JSON.stringify(heard)).not.toMatch(/one|three|five/);
    stop();
    await a.put('z', { n: 6, s: 'six' });
    await tick();
    expect(heard).toHaveLength(3);
    await s.close();
  });

  it('a listener on ids or a prefix is called only for commits that touch them, with those ids', async () => {
    const s = await fresh();
    const c = s.collection('c', { schema });
    const byIds: Change[] = [];
    const byPrefix: Change[] = [];
    const either: Change[] = [];
    c.watch((x) => byIds.push(x), { ids: ['k1', 'k2'] });
    c.watch((x) => byPrefix.push(x), { prefix: 'inbox/' });
    c.watch((x) => either.push(x), { ids: new Set(['k3']), prefix: 'sent/' });
    await c.put('other', { n: 0, s: '' });
    await s.batch((tx) => {
      tx.put(c, 'k2', { n: 1, s: '' });
      tx.put(c, 'inbox/1', { n: 2, s: '' });
      tx.put(c, 'k9', { n: 3, s: '' });
    });
    await c.put('sent/1', { n: 4, s: '' });
    await c.put('k3', { n: 5, s: '' });
    await tick();
    expect(byIds.map((x) => x.ids)).toEqual([['k2']]);
    expect(byPrefix.map((x) => x.ids)).toEqual([['inbox/1']]);
    expect(either.map((x) => x.ids)).toEqual([['sent/1'], ['k3']]);
    expect(() => c.watch(() => undefined, { ids: 'k1' as never })).toThrow(TypeError);
    expect(() => c.watch(() => undefined, { prefix: 3 as never })).toThrow(TypeError);
    expect(() => c.watch('no' as never)).toThrow(TypeError);
    await s.close();
  });

  it('store.changes() yields every collection in commit order, filters, and ends on break, abort and close', async () => {
    const s = await fresh();
    const a = s.collection('a', { schema });
    const b = s.collection('b', { schema });
    const all = s.changes();
    const onlyB = s.changes({ collections: ['b'] });
    const ac = new AbortController();
    const aborted = s.changes({ signal: ac.signal });
    await a.put('1', { n: 1, s: '' });
    await b.put('2', { n: 2, s: '' });
    await s.batch((tx) => {
      tx.put(b, '3', { n: 3, s: '' });
      tx.put(a, '4', { n: 4, s: '' });
    });
    const first = s.info().commit - 2;
    const got: Change[] = [];
    for await (const c of all) {
      got.push(c);
      if (got.length === 4) break; // leaving the loop ends it
    }
    expect(got).toEqual([
      { commit: first, collection: 'a', ids: ['1'] },
      { commit: first + 1, collection: 'b', ids: ['2'] },
      { commit: first + 2, collection: 'b', ids: ['3'] },
      { commit: first + 2, collection: 'a', ids: ['4'] },
    ]);
    expect(await all.next()).toEqual({ value: undefined, done: true });
    expect((await onlyB.next()).value).toMatchObject({ collection: 'b', ids: ['2'] });
    expect((await onlyB.next()).value).toMatchObject({ collection: 'b', ids: ['3'] });
    expect((await aborted.next()).value).toMatchObject({ ids: ['1'] });
    ac.abort();
    expect((await aborted.next()).done).toBe(true);
    // A waiting iterator ends when the store closes.
    const waiting = onlyB.next();
    await s.close();
    expect(await waiting).toEqual({ value: undefined, done: true });
    expect(() => s.changes()).toThrow(expect.objectContaining({ code: 'NOT_OPEN' }));
  });

  it('next() called twice before a change: both settle, in order', async () => {
    const s = await fresh();
    const c = s.collection('c', { schema });
    const it = s.changes();
    const [p1, p2] = [it.next(), it.next()];
    await c.put('one', { n: 1, s: '' });
    await c.put('two', { n: 2, s: '' });
    expect([(await p1).value?.ids, (await p2).value?.ids]).toEqual([['one'], ['two']]);
    await s.close();
  });

  it('live() re-runs a get, a scan or a search only when a commit touches what it read', async () => {
    const s = await fresh();
    const c = s.collection('c', { schema, index: { text: ['s'] } });
    await c.put('inbox/1', { n: 1, s: 'red apple' });
    await c.put('k', { n: 2, s: 'green pear' });
    const gets: unknown[] = [];
    const scans: { id: string }[][] = [];
    const searches: { id: string }[][] = [];
    const stopGet = c.live({ get: 'k' }, (v) => gets.push(v));
    const stopScan = c.live<{ id: string }[]>({ scan: { prefix: 'inbox/' } }, (rows) => scans.push(rows));
    c.live<{ id: string }[]>({ search: 'red' }, (hits) => searches.push(hits));
    await tick();
    expect(gets).toEqual([{ n: 2, s: 'green pear' }]);
    expect(scans.map((x) => x.map((r) => r.id))).toEqual([['inbox/1']]);
    await c.put('inbox/2', { n: 3, s: 'red cherry' }); // the scan and the search, not the get
    await tick();
    await tick();
    expect(gets).toHaveLength(1);
    expect(scans.map((x) => x.map((r) => r.id))).toEqual([['inbox/1'], ['inbox/1', 'inbox/2']]);
    expect(searches.map((x) => x.map((r) => r.id).sort())).toEqual([['inbox/1'], ['inbox/1', 'inbox/2']]);
    await c.put('k', { n: 4, s: 'blue plum' }); // the get and the search
    await tick();
    await tick();
    expect(gets).toEqual([
      { n: 2, s: 'green pear' },
      { n: 4, s: 'blue plum' },
    ]);
    expect(scans).toHaveLength(2);
    stopGet();
    stopScan();
    await c.delete('k');
    await c.put('inbox/3', { n: 5, s: '' });
    await tick();
    await tick();
    expect(gets).toHaveLength(2);
    expect(scans).toHaveLength(2);
    const errors: unknown[] = [];
    c.live(
      { get: 'inbox/1' },
      () => undefined,
      (e) => errors.push(e),
    );
    expect(() => c.live({ get: '' }, () => undefined)).toThrow(TypeError);
    expect(() => c.live({ nothing: 1 } as never, () => undefined)).toThrow(TypeError);
    await s.close();
    expect(errors).toEqual([]);
  });

  it('a migration copies every record without a change; writes during it are heard', async () => {
    const s = await fresh();
    const c = s.collection('c', { schema });
    await s.batch((tx) => {
      for (let i = 0; i < 300; i++) tx.put(c, `r${i}`, { n: i, s: 'v' });
    });
    const heard: Change[] = [];
    c.watch((x) => heard.push(x));
    const migrating = s.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    await c.put('during', { n: -1, s: 'w' });
    await migrating;
    await tick();
    expect(s.migration()?.phase ?? 'done').not.toBe('copying');
    expect(heard.map((x) => x.ids)).toEqual([['during']]);
    await s.close();
  });

  it('filterChange: a reset is heard by every filter; ids and prefix select', () => {
    const change = { commit: 7, collection: 'c', ids: ['a1', 'b1', 'a2'] };
    expect(filterChange(change, undefined, undefined)).toBe(change);
    expect(filterChange(change, new Set(['b1']), undefined)?.ids).toEqual(['b1']);
    expect(filterChange(change, undefined, 'a')?.ids).toEqual(['a1', 'a2']);
    expect(filterChange(change, new Set(['z']), 'q')).toBeUndefined();
    const reset = { commit: 8, collection: 'c', ids: [], reset: true as const };
    expect(filterChange(reset, new Set(['z']), 'q')).toBe(reset);
  });
});

describe('request ids', () => {
  it('a put or batch given again with the id of a committed one is not applied again; ids are checked', async () => {
    const s = await fresh();
    const c = s.collection('c', { schema });
    const rid = Buffer.from(new Uint8Array(16).fill(7)).toString('base64');
    const heard: Change[] = [];
    c.watch((x) => heard.push(x));
    await c.put('k', { n: 1, s: 'first' }, { requestId: rid });
    const commit = s.info().commit;
    await c.put('k', { n: 2, s: 'retried' }, { requestId: rid }); // the same id: done already
    expect(s.info().commit).toBe(commit);
    expect(await c.get('k')).toEqual({ n: 1, s: 'first' });
    const batchId = Buffer.from(new Uint8Array(16).fill(9)).toString('base64');
    const twice = () => s.batch((tx) => tx.put(c, 'b', { n: 3, s: 'batch' }), { requestId: batchId });
    await twice();
    await twice();
    expect(s.info().commit).toBe(commit + 1);
    // The last 64 ids are kept: the 65th write later makes the first one new again.
    for (let i = 0; i < 64; i++)
      await c.put(
        `x${i}`,
        { n: i, s: '' },
        { requestId: Buffer.from(new Uint8Array(16).fill(100 + i)).toString('base64') },
      );
    await c.put('k', { n: 4, s: 'again' }, { requestId: rid });
    expect(await c.get('k')).toEqual({ n: 4, s: 'again' });
    await tick();
    expect(heard.filter((x) => x.ids.includes('k'))).toHaveLength(2);
    await expect(c.put('k', { n: 5, s: '' }, { requestId: 'short' })).rejects.toThrow(TypeError);
    await s.close();
  });

  it('a manifest whose request id list is not one pqdb writes is CORRUPTION', async () => {
    const s = await fresh();
    const { v, storeId, commit, keyring, ...rest } = structuredClone(engineOf(s).pipeline.manifest);
    const header = { v, storeId, commit, envelopes: keyring.map((k) => [k.generation, k.envelopes]) } as never;
    const body = (requests: unknown) => ({ ...rest, keyring: keyring.map(({ envelopes: _e, ...k }) => k), requests });
    expect(checkManifest(header, body(['AAAAAAAAAAAAAAAAAAAAAA=='])).requests).toHaveLength(1);
    for (const bad of [
      ['not base64'],
      ['AAAAAAAAAAAAAAAAAAAAAB=='],
      Array(65).fill('AAAAAAAAAAAAAAAAAAAAAA=='),
      'x',
      [3],
    ])
      expect(() => checkManifest(header, body(bad))).toThrow(expect.objectContaining({ code: 'CORRUPTION' }));
    await s.close();
  });
});
