// The worker engine's protocol in Node: the page side (src/worker/client.ts) and the worker side
// (src/worker/serve.ts) over a real MessageChannel (structured clone, transfers), the engine on a
// memory store. What a dedicated worker adds (OPFS, the page thread left free) is proven in
// Chromium (browser-tests/worker.spec.mjs).
import { describe, it, expect, afterEach } from 'vitest';
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  openStore,
  restoreStore,
  generateRecipient,
  generateSigner,
  verifySealed,
  PqdbError,
  type OpenStoreOptions,
} from '../src/node';
import { MemoryMedium, openMemoryPageStore } from '../src/storage/memory';
import { WorkerStore } from '../src/worker/client';
import { serveConnections, type ServeWorkerOptions } from '../src/worker/serve';
import { SCAN_CHUNK } from '../src/worker/protocol';
import type { Change } from '../src/engine/changes';

const recipient = generateRecipient();
const signer = generateSigner();
const open: WorkerStore[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => undefined);
});

/** A "worker": a scope the server listens on, and the object a page posts `connect` to. */
function fakeWorker(serve: ServeWorkerOptions = {}, medium = new MemoryMedium(), restored = new MemoryMedium()) {
  const scope = new EventTarget();
  const opened: OpenStoreOptions[] = [];
  serveConnections(
    scope,
    {
      open: async (o) => {
        opened.push(o);
        const pages = await openMemoryPageStore({ medium });
        return openStore({ ...o, storage: pages }).catch(async (e: unknown) => {
          await pages.close();
          throw e;
        });
      },
      restore: async (copy, o) => {
        const pages = await openMemoryPageStore({ medium: restored });
        return restoreStore(copy, { ...o, storage: pages });
      },
      storageInfo: async (s) => ({ pageStore: s.info().storage }),
    },
    serve,
  );
  const worker = {
    postMessage: (data: unknown) => scope.dispatchEvent(new MessageEvent('message', { data })),
    addEventListener: () => undefined,
    removeEventListener: () => undefined,
    terminate: () => undefined,
  } as unknown as Worker;
  return { worker, opened, medium };
}

/** A restore of `copy` (a copy's location or a backup file's bytes) into a new fake worker, under this file's keys. */
function restoreIn(copy: string | Uint8Array, location = 'restored') {
  return WorkerStore.restore(copy, {
    worker: fakeWorker().worker,
    unlock: recipient.secretKey.slice(),
    trustedSigner: signer.publicKey,
    recipients: [recipient.publicKey],
    location,
  });
}

async function openIn(worker: Worker, extra: Record<string, unknown> = {}): Promise<WorkerStore> {
  const s = await WorkerStore.open({
    worker,
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey.slice(),
    signer: signer.secretKey.slice(),
    signerPublicKey: signer.publicKey,
    ...extra,
  });
  open.push(s);
  return s;
}

const schema = { lemma: 'string', n: 'integer' } as const;

describe('the worker engine over a MessageChannel', () => {
  it('serves the collection API: put, get, has, delete, count, batch, search, scan, exportSealed', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const words = s.collection('words', { schema, index: { text: ['lemma'] } });
    await words.put('a', { lemma: 'alpha', n: 1 });
    expect(await words.get('a')).toEqual({ lemma: 'alpha', n: 1 });
    expect(await words.get('nope')).toBeUndefined();
    expect(await words.has('a')).toBe(true);
    await s.batch((tx) => {
      for (let i = 0; i < 600; i++) tx.put(words, `w${String(i).padStart(4, '0')}`, { lemma: `word${i}`, n: i });
      tx.delete(words, 'a');
    });
    expect(await words.count()).toBe(600);
    expect(await words.delete('a')).toBe(false);
    expect(await words.delete('w0000')).toBe(true);
    const hits = await words.search('word7');
    expect(hits.map((h) => h.id)).toEqual(['w0007']);
    expect(hits.withheld).toBe(0);
    // A scan of more than two chunks, in id order, every record once.
    const seen: string[] = [];
    for await (const r of words.scan()) seen.push(r.id);
    expect(seen.length).toBe(599);
    expect(seen.length).toBeGreaterThan(2 * SCAN_CHUNK);
    expect([...seen].sort()).toEqual(seen);
    const some: string[] = [];
    for await (const r of words.scan({ prefix: 'w01', limit: 5 })) some.push(r.id);
    expect(some).toEqual(['w0100', 'w0101', 'w0102', 'w0103', 'w0104']);
    const sealed = await words.exportSealed('w0042');
    expect(verifySealed(sealed, signer.publicKey).id).toBe('w0042');
    const info = await s.info();
    expect(info.collections).toEqual({ words: 599 });
    expect((await s.checkpoints()).length).toBeGreaterThan(0);
    expect((await s.posture()).bomFormat).toBe('CycloneDX');
    expect(await s.storageInfo()).toEqual({ pageStore: 'memory' });
    expect(s.recovery.clean).toBe(true);
  });

  it('serves queries on secondary indexes, versions and compare-and-set, and the stored collection without options', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const words = s.collection('words', { schema, index: { by: ['n', ['lemma', 'n']] } });
    await s.batch((tx) => {
      for (let i = 0; i < 300; i++) tx.put(words, `w${i}`, { lemma: `l${i % 3}`, n: i });
    });
    const got = await words.where('n').between(10, 20).reverse().toArray();
    expect(got.map((r) => r.value.n)).toEqual([19, 18, 17, 16, 15, 14, 13, 12, 11, 10]);
    const l1 = await words
      .where(['lemma', 'n'])
      .equals('l1')
      .filter((v) => v.n % 2 === 0)
      .limit(3)
      .toArray();
    expect(l1.map((r) => r.id)).toEqual(['w4', 'w10', 'w16']);
    expect((await words.where('lemma').equals('l2').limit(2).toArray()).map((r) => r.id)).toEqual(['w2', 'w5']);
    expect((await words.orderBy('n').offset(297).toArray()).map((r) => r.id)).toEqual(['w297', 'w298', 'w299']);
    expect(() => words.where('nope')).toThrow(TypeError);
    // Versions and compare-and-set cross too.
    const v = (await words.version('w1'))!;
    await words.put('w1', { lemma: 'l1', n: 1000 }, { ifVersion: v });
    await expect(words.put('w1', { lemma: 'l1', n: 1 }, { ifVersion: v })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await words.where('n').between(1000, 1001, { upper: true }).toArray()).map((r) => r.id)).toEqual(['w1']);
    expect((await s.collections()).map((c) => c.name)).toEqual(['words']);
    await s.close();
    // Opened again without options: the worker knows the stored indexes (and refuses an unknown one).
    const t = await openIn(worker);
    const again = t.collection('words');
    expect((await again.where('n').equals(5).toArray()).map((r) => r.value)).toEqual([{ lemma: 'l2', n: 5 }]);
    expect((await again.where('lemma').equals('l0').limit(2).toArray()).map((r) => r.id)).toEqual(['w0', 'w3']);
    await expect(again.where('nope').all().toArray()).rejects.toThrow(TypeError);
  });

  it('a scan left early ends on the worker side too, and other calls go on', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const c = s.collection('c', { schema });
    await s.batch((tx) => {
      for (let i = 0; i < 2000; i++) tx.put(c, `k${String(i).padStart(5, '0')}`, { lemma: 'x', n: i });
    });
    let n = 0;
    for await (const _ of c.scan()) if (++n === 10) break;
    expect(n).toBe(10);
    await c.put('late', { lemma: 'y', n: 1 });
    expect(await c.count()).toBe(2001);
  });

  it('errors cross with their class and code', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const c = s.collection('c', { schema });
    await expect(c.put('x', { lemma: 'a', n: 'not a number' } as never)).rejects.toMatchObject({
      name: 'PqdbError',
      code: 'SCHEMA_MISMATCH',
    });
    const err = await c.put('x', { lemma: 1 } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PqdbError);
    // Checked on the page at once, as a Store checks them.
    expect(() => s.collection('', { schema })).toThrow(TypeError);
    expect(() => s.collection('d', { schema: { a: 'nonsense' } as never })).toThrow(TypeError);
    await expect(c.has('')).rejects.toThrow(TypeError);
    // A schema other than the stored one: every call on that collection rejects with the RangeError.
    await c.put('y', { lemma: 'b', n: 2 });
    const other = await openIn(fakeWorker().worker);
    await other.close();
    const again = s.collection('c', { schema });
    expect(again).toBe(c);
    await expect(s.backup(undefined as never)).rejects.toThrow(TypeError);
    await s.close();
    await expect(c.get('y')).rejects.toMatchObject({ code: 'NOT_OPEN' });
    await expect(s.info()).rejects.toMatchObject({ code: 'NOT_OPEN' });
  });

  it('a stored schema that differs rejects the collection’s calls with RangeError', async () => {
    const medium = new MemoryMedium();
    const first = await openIn(fakeWorker({}, medium).worker);
    await first.collection('c', { schema }).put('a', { lemma: 'a', n: 1 });
    await first.close();
    const s = await openIn(fakeWorker({}, medium).worker, { create: false });
    const c = s.collection('c', { schema: { other: 'string' } });
    await expect(c.get('a')).rejects.toThrow(RangeError);
    expect(await s.collection('c2', { schema }).count()).toBe(0);
  });

  it('a wrong key is AUTH_FAILED; keys are copied to the worker and wiped here; functions are refused', async () => {
    const medium = new MemoryMedium();
    const first = await openIn(fakeWorker({}, medium).worker);
    await first.close();
    const { worker, opened } = fakeWorker({}, medium);
    const wrong = generateRecipient().secretKey;
    await expect(WorkerStore.open({ worker, unlock: wrong })).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    expect(wrong.every((b) => b === 0)).toBe(true);
    const unlock = recipient.secretKey.slice();
    const s = await WorkerStore.open({ worker, unlock });
    open.push(s);
    expect(unlock.every((b) => b === 0)).toBe(true);
    expect(opened.at(-1)!.unlock).toEqual(recipient.secretKey);
    await expect(
      WorkerStore.open({ worker, unlock: recipient.secretKey.slice(), authority: () => true } as never),
    ).rejects.toThrow(/serveWorkerEngine/);
    await expect(s.migrate({ to: 'gcmsiv-hkdf384', authority: () => true })).rejects.toThrow(TypeError);
  });

  it('the worker unwraps the key itself from a CryptoKey the page passes in `context`', async () => {
    const kek = await webcrypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    const iv = webcrypto.getRandomValues(new Uint8Array(12));
    const wrapped = new Uint8Array(await webcrypto.subtle.encrypt({ name: 'AES-GCM', iv }, kek, recipient.secretKey));
    const { worker } = fakeWorker({
      options: async (requested, context) => {
        const c = context as { kek: CryptoKey; iv: Uint8Array; wrapped: Uint8Array };
        const unlock = new Uint8Array(await webcrypto.subtle.decrypt({ name: 'AES-GCM', iv: c.iv }, c.kek, c.wrapped));
        return { ...requested, unlock };
      },
    });
    const s = await WorkerStore.open({
      worker,
      create: true,
      recipients: [recipient.publicKey],
      context: { kek, iv, wrapped },
    });
    open.push(s);
    await s.collection('c', { schema }).put('a', { lemma: 'a', n: 1 });
    expect(await s.collection('c', { schema }).get('a')).toEqual({ lemma: 'a', n: 1 });
  });

  it('a migration runs in the worker with progress events and pauses on abort', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const c = s.collection('c', { schema });
    await s.batch((tx) => {
      for (let i = 0; i < 3000; i++) tx.put(c, `k${i}`, { lemma: 'x', n: i });
    });
    const abort = new AbortController();
    const seen: number[] = [];
    const paused = s.migrate({
      to: 'cnsa2-gcm-hkdf384-commit',
      chunkRecords: 256,
      signal: abort.signal,
      onProgress: (p) => {
        seen.push(p.copied);
        if (p.copied >= 512) abort.abort();
      },
    });
    await expect(paused).rejects.toMatchObject({ code: 'ABORTED' });
    expect(seen.length).toBeGreaterThan(0);
    const progress: number[] = [];
    const done = await s.migrate({ to: 'cnsa2-gcm-hkdf384-commit', onProgress: (p) => progress.push(p.copied) });
    expect(done.copied + done.superseded).toBeGreaterThan(0);
    expect(done.total).toBe(3000);
    expect(progress.at(-1)).toBe(done.copied);
    expect((await s.migration())?.phase).toBe(done.phase);
    expect(await c.get('k2999')).toEqual({ lemma: 'x', n: 2999 });
  });

  it('a backup written through the worker restores into a new store the worker then serves', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-worker-copy-'));
    try {
      const { worker } = fakeWorker();
      const s = await openIn(worker);
      const c = s.collection('c', { schema });
      await s.batch((tx) => {
        for (let i = 0; i < 500; i++) tx.put(c, `k${i}`, { lemma: 'x', n: i });
      });
      const { copy } = await s.backup(join(dir, 'copy'));
      expect((await s.copies()).map((x) => x.id)).toContain(copy.id);
      await s.close();
      const r = await restoreIn(join(dir, 'copy'));
      open.push(r.store);
      expect(r.restored).toBe(500);
      expect(await r.store.collection('c', { schema }).get('k499')).toEqual({ lemma: 'x', n: 499 });
      expect(await r.store.collection('c', { schema }).count()).toBe(500);
      await expect(WorkerStore.restore(join(dir, 'copy'), { worker, live: s, location: 'x' } as never)).rejects.toThrow(
        /"live" cannot be sent/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a backup file made in the worker comes to the page as bytes and restores from them in a new worker', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const c = s.collection('c', { schema });
    await s.batch((tx) => {
      for (let i = 0; i < 300; i++) tx.put(c, `k${i}`, { lemma: 'x', n: i });
    });
    const { file, copy } = await s.backupFile();
    expect(file).toBeInstanceOf(Uint8Array);
    expect((await s.copies()).find((x) => x.id === copy.id)?.destination).toBe('a backup file');
    const r = await restoreIn(file);
    open.push(r.store);
    expect(r.restored).toBe(300);
    expect(await r.store.collection('c', { schema }).get('k299')).toEqual({ lemma: 'x', n: 299 });
    file[file.length - 1] ^= 1;
    await expect(restoreIn(file, 'again')).rejects.toMatchObject({
      code: 'CORRUPTION',
      message: expect.stringMatching(/not a pqdb backup file/),
    });
    await expect(WorkerStore.restore(42 as never, { worker, location: 'x' } as never)).rejects.toThrow(TypeError);
  });

  it('change notifications cross: watch with a prefix, store.changes(), live(); the stream stops with the last listener', async () => {
    const { worker } = fakeWorker();
    const s = await openIn(worker);
    const c = s.collection('w', { schema });
    const other = s.collection('o', { schema });
    const heard: Change[] = [];
    const stop = c.watch((x) => heard.push(x), { prefix: 'a' });
    const all = s.changes();
    const live: unknown[] = [];
    const stopLive = c.live({ get: 'a1' }, (v) => live.push(v));
    await c.put('a1', { lemma: 'one', n: 1 });
    await c.put('b1', { lemma: 'two', n: 2 }); // not the prefix
    await s.batch((tx) => {
      tx.put(c, 'a2', { lemma: 'three', n: 3 });
      tx.put(other, 'a3', { lemma: 'four', n: 4 }); // another collection
    });
    const last = (await s.info()).commit;
    const got: Change[] = [];
    for await (const x of all) if (got.push(x) === 4) break;
    expect(got.map((x) => [x.commit, x.collection, x.ids])).toEqual([
      [last - 2, 'w', ['a1']],
      [last - 1, 'w', ['b1']],
      [last, 'w', ['a2']],
      [last, 'o', ['a3']],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(heard.map((x) => [x.commit, x.ids])).toEqual([
      [last - 2, ['a1']],
      [last, ['a2']],
    ]);
    expect(live).toEqual([undefined, { lemma: 'one', n: 1 }]);
    expect(JSON.stringify(heard)).not.toMatch(/one|three/);
    stop();
    stopLive();
    await c.put('a4', { lemma: 'five', n: 5 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(heard).toHaveLength(2);
    // With no listener left the worker streams nothing; a new listener starts it again.
    const again: Change[] = [];
    c.watch((x) => again.push(x));
    await c.put('a5', { lemma: 'six', n: 6 });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(again.map((x) => x.ids)).toEqual([['a5']]);
    const waiting = s.changes().next();
    await s.close();
    expect((await waiting).done).toBe(true);
  });

  it('dataKeyFor is refused: data keys never leave the worker', async () => {
    const s = await openIn(fakeWorker().worker);
    await expect(s.connection.call(0, 'dataKeyFor', [1, 1, ''])).rejects.toThrow(/never leave the worker/);
    await expect(s.connection.call(0, 'constructor', [])).rejects.toThrow(TypeError);
    await expect(s.connection.call(0, '__proto__', [])).rejects.toThrow(TypeError);
  });
});
