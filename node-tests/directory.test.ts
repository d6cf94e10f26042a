// The key directory (src/engine/directory/) against a Map model, its snapshots
// (src/engine/directory/format.ts, pages.ts, partitions.ts) round-tripped and sealed, and a store that opens from its
// persisted directory: the records it gives are those a full replay gives; pages of the directory
// that are missing, altered, swapped or replayed from an older commit are refused.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { KeyDirectory, type Location } from '../src/engine/directory';
import {
  encodeSnapshot,
  decodeSnapshot,
  applySnapshot,
  sealSnapshot,
  sealBase,
  openSnapshot,
  partSource,
  readSnapshotSync,
  DIRECTORY_PART_BYTES,
} from '../src/engine/directory';
import { engineOf } from '../src/engine/store';
import { MerkleLogs, LOG_PAGE_LEAVES } from '../src/engine/merkle-log';
import { decodeLogPage } from '../src/engine/page-format';
import type { LogPageRef } from '../src/engine/manifest';
import { verifyStore } from '../src/index';
import { openStore, generateRecipient, generateSigner, openMemoryPageStore, PqdbError } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { pageKind } from '../src/engine/page-format';
import { crc32c } from '../src/_crc32c';
import { docsOpener } from './support/memory-docs';
import { fnv1a, partOf } from '../src/engine/directory/rows';

const loc = (n: number, governance = '{}'): Location => ({
  leafIndex: n,
  generation: 1 + (n % 3),
  pageId: 10 + (n % 7),
  offset: n * 3,
  length: 100 + (n % 50),
  sequence: 2 ** 40 + n,
  suite: 2 + (n % 2),
  governance,
});

const idArb = fc.oneof(
  fc.constantFrom('a', 'b', 'c', 'ü', '漢字', 'x'.repeat(300)),
  fc.string({ minLength: 1, maxLength: 12 }),
  fc.integer({ min: 0, max: 400 }).map((i) => `id-${i}`),
);
const opArb = fc.oneof(
  fc.record({ t: fc.constant('set' as const), c: fc.constantFrom('c1', 'c2'), id: idArb, n: fc.nat(10_000) }),
  fc.record({ t: fc.constant('del' as const), c: fc.constantFrom('c1', 'c2'), id: idArb }),
  fc.record({ t: fc.constant('snap' as const) }),
);

/** The directory's content as plain data, for comparison. */
function dump(d: KeyDirectory): Record<string, Record<string, Location>> {
  const out: Record<string, Record<string, Location>> = {};
  for (const [name, t] of d.collections()) {
    const m: Record<string, Location> = {};
    for (const [id, l] of t) m[id] = l;
    out[name] = m;
  }
  return out;
}

/** A copy of `d` through a snapshot (base), or `base` with a run of `d`'s changes applied. */
async function roundTrip(d: KeyDirectory, kind: 'base' | 'run', into = new KeyDirectory()): Promise<KeyDirectory> {
  const { bytes } = await encodeSnapshot(d, kind, 99, { 1: 5 }, { c1: ['p'] });
  const aligned = new Uint8Array(bytes.length);
  aligned.set(bytes);
  const snap = decodeSnapshot(aligned);
  expect(snap.header.pending).toEqual({ c1: ['p'] });
  applySnapshot(into, snap);
  return into;
}

describe('key directory', () => {
  it('gives what a Map gives, through sets, deletes, growth, snapshots and runs', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 400 }), async (ops) => {
        const d = new KeyDirectory();
        const model = new Map<string, Map<string, Location>>();
        let copy: KeyDirectory | undefined;
        for (const [i, op] of ops.entries()) {
          if (op.t === 'snap') {
            // A base the first time, then runs onto the copy.
            copy = copy === undefined ? await roundTrip(d, 'base') : await roundTrip(d, 'run', copy);
            d.persisted(false);
            expect(dump(copy)).toEqual(dump(d));
            continue;
          }
          let m = model.get(op.c);
          if (m === undefined) model.set(op.c, (m = new Map()));
          if (op.t === 'set') {
            const l = loc(op.n, `{"g":${i % 4}}`);
            d.set(op.c, op.id, l);
            m.set(op.id, l);
          } else {
            d.delete(op.c, op.id);
            m.delete(op.id);
          }
        }
        for (const [c, m] of model) {
          expect(d.count(c)).toBe(m.size);
          expect(d.ids(c)).toEqual([...m.keys()].sort());
          for (const [id, l] of m) expect(d.get(c, id)).toEqual(l);
          expect(d.get(c, 'absent-id')).toBe(m.get('absent-id'));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('a base in partitions loads each on first use and gives what a whole load gives, a run over it too', async () => {
    const key = new Uint8Array(32).fill(3);
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 300 }),
        fc.option(fc.array(opArb, { maxLength: 200 })),
        fc.array(
          fc.oneof(opArb, fc.record({ t: fc.constant('get' as const), c: fc.constantFrom('c1', 'c2'), id: idArb })),
          {
            maxLength: 300,
          },
        ),
        fc.integer({ min: 1, max: 64 }),
        async (before, run, after, partRows) => {
          const d = new KeyDirectory();
          const apply = (dir: KeyDirectory, op: (typeof after)[number], i: number) => {
            if (op.t === 'set') dir.set(op.c, op.id, loc(op.n, `{"g":${i % 3}}`));
            else if (op.t === 'del') dir.delete(op.c, op.id);
          };
          before.forEach((op, i) => apply(d, op, i));
          d.addPage(12, 1, new Uint8Array(16).fill(1), 500);
          // The base as a checkpoint seals it: partitions in pages of their own, then the head.
          const pages = new Map<number, Uint8Array>();
          let next = 100;
          const sink = {
            pageId: () => next++,
            addPage: (p: { id: number; bytes: Uint8Array }) => void pages.set(p.id, p.bytes),
          };
          const base = await sealBase(sink, key, d, 50, {}, undefined, undefined, undefined, partRows);
          const head = decodeSnapshot(readSnapshotSync(key, base.pages, base.bytes, (id) => pages.get(id)));
          expect(head.header.parts!.pages.flat()).toEqual(base.partPages);
          const lazy = new KeyDirectory();
          applySnapshot(lazy, head);
          const loads: number[] = [];
          const source = partSource(
            head.header,
            () => key,
            (id) => pages.get(id),
          );
          lazy.lazyBase({ ...source, load: (p) => (loads.push(p), source.load(p)) }, base.partPages);
          expect(lazy.page(12)?.bytes).toBe(500);
          if (run !== null) {
            // The writes after the base, as an open finds them: a run applied before any partition loads.
            d.persisted(false);
            run.forEach((op, i) => apply(d, op, i + 1000));
            await roundTrip(d, 'run', lazy);
            d.persisted(false);
            for (const c of ['c1', 'c2']) expect(lazy.count(c)).toBe(d.count(c)); // the run's ids are not counted twice
          }
          // Every partition with rows waits to load; an empty one has nothing to load.
          const tables = Object.values(head.header.parts!.tables);
          const withRows = head.header.parts!.pages.filter((_, p) => tables.some((t) => t.rows[p] > 0)).length;
          if (run === null) expect(lazy.unloadedParts).toBe(withRows);
          after.forEach((op, i) => {
            if (op.t === 'get') {
              expect(lazy.get(op.c, op.id)).toEqual(d.get(op.c, op.id));
              expect(lazy.has(op.c, op.id)).toBe(d.has(op.c, op.id));
            } else if (op.t === 'snap') {
              for (const c of ['c1', 'c2']) expect(lazy.count(c)).toBe(d.count(c));
              expect(lazy.liveBytes()).toEqual(d.liveBytes());
            } else (apply(d, op, i), apply(lazy, op, i));
          });
          expect(new Set(loads).size).toBe(loads.length); // a partition loads once
          expect(dump(lazy)).toEqual(dump(d));
          expect(lazy.unloadedParts).toBe(0);
        },
      ),
      { numRuns: 120 },
    );
  });

  it('a partition that fails its checks merges nothing; a run read during a pause keeps its ids', async () => {
    const key = new Uint8Array(32).fill(4);
    const d = new KeyDirectory();
    for (let i = 0; i < 3000; i++) d.set('c', `k${i}`, loc(i));
    const pages = new Map<number, Uint8Array>();
    let next = 100;
    const sink = {
      pageId: () => next++,
      addPage: (p: { id: number; bytes: Uint8Array }) => void pages.set(p.id, p.bytes),
    };
    const base = await sealBase(sink, key, d, 50, {}, undefined, undefined, undefined, 256);
    const head = decodeSnapshot(readSnapshotSync(key, base.pages, base.bytes, (id) => pages.get(id)));
    const make = (swap: boolean) => {
      const lazy = new KeyDirectory();
      applySnapshot(lazy, head);
      const source = partSource(
        head.header,
        () => key,
        (id) => pages.get(id),
      );
      // Partition 0 given partition 1's rows (authentic, but not partition 0's).
      lazy.lazyBase({ ...source, load: (p) => source.load(swap && p === 0 ? 1 : p) }, base.partPages);
      return lazy;
    };
    const bad = make(true);
    const parts = bad.unloadedParts;
    expect(() => bad.loadPart(0)).toThrow(PqdbError);
    expect(bad.unloadedParts).toBe(parts);
    bad.loadPart(1);
    expect(bad.unloadedParts).toBe(parts - 1);
    expect(() => bad.count('c')).not.toThrow(); // nothing written since: no partition to load
    expect(bad.count('c')).toBe(3000);
    // A run's rows read while partitions load (the arena, nine-tenths dead, is compacted under the read).
    const big = new KeyDirectory();
    for (let i = 0; i < 300_000; i++) big.set('c', `base-record-${i}`, loc(i));
    const bigPages = new Map<number, Uint8Array>();
    const bigSink = {
      pageId: () => next++,
      addPage: (p: { id: number; bytes: Uint8Array }) => void bigPages.set(p.id, p.bytes),
    };
    const bigBase = await sealBase(bigSink, key, big, 50, {});
    const bigHead = decodeSnapshot(readSnapshotSync(key, bigBase.pages, bigBase.bytes, (id) => bigPages.get(id)));
    const lazy = new KeyDirectory();
    applySnapshot(lazy, bigHead);
    lazy.lazyBase(
      partSource(
        bigHead.header,
        () => key,
        (id) => bigPages.get(id),
      ),
      bigBase.partPages,
    );
    const id = (i: number) => `n${i}`;
    for (let i = 0; i < 700_000; i++) lazy.set('c', id(i), loc(i));
    for (let i = 0; i < 700_000; i++) if (i % 10 !== 0) lazy.delete('c', id(i));
    lazy.persisted(false);
    const want = new Set<string>();
    for (let i = 0; i < 700_000; i += 10) (lazy.set('c', id(i), loc(i + 1)), want.add(id(i)));
    const rows = await lazy.entries('c').rows(
      () => 0,
      want,
      async () => lazy.loadAll(),
    );
    expect(lazy.unloadedParts).toBe(0);
    const got: string[] = [];
    for (let i = 0, at = 0; i < rows.n; i++) {
      got.push(Buffer.from(rows.ids.subarray(at, at + rows.idLength[i])).toString());
      at += rows.idLength[i];
    }
    expect(got).toEqual([...want]);
  });

  it('persists a log of more leaves than a page holds in several log pages, contiguous', async () => {
    const logs = new MerkleLogs();
    const n = LOG_PAGE_LEAVES * 2 + 77;
    const hashes = new Uint8Array(n * 48).map((_, i) => (i * 31 + (i >> 8)) & 0xff);
    logs.append(1, hashes.subarray(0, 10 * 48));
    const refs: Record<string, LogPageRef[]> = {};
    const pages = new Map<number, Uint8Array>();
    let next = 1;
    const sink = {
      pageId: () => next++,
      addPage: (p: { id: number; bytes: Uint8Array }) => void pages.set(p.id, p.bytes),
    };
    await logs.pushLogPage(1, refs, sink);
    logs.append(1, hashes.subarray(10 * 48));
    await logs.pushLogPage(1, refs, sink);
    expect(refs[1].map((r) => [r.from, r.to])).toEqual([
      [0, 10],
      [10, 10 + LOG_PAGE_LEAVES],
      [10 + LOG_PAGE_LEAVES, 10 + 2 * LOG_PAGE_LEAVES],
      [10 + 2 * LOG_PAGE_LEAVES, n],
    ]);
    const back = refs[1].map((r) => decodeLogPage(pages.get(r.pageId)!, 1, r.from, r.to));
    expect(Buffer.concat(back).equals(Buffer.from(hashes))).toBe(true);
  });

  it('holds 200,000 records in typed columns and finds each', async () => {
    const d = new KeyDirectory();
    for (let i = 0; i < 200_000; i++) d.set('w', `n${i.toString().padStart(8, '0')}`, loc(i));
    for (let i = 0; i < 200_000; i += 2) d.delete('w', `n${i.toString().padStart(8, '0')}`);
    expect(d.count('w')).toBe(100_000);
    for (let i = 1; i < 200_000; i += 998) expect(d.get('w', `n${i.toString().padStart(8, '0')}`)).toEqual(loc(i));
    expect(d.has('w', 'n00000000')).toBe(false);
    const copy = await roundTrip(d, 'base');
    expect(copy.count('w')).toBe(100_000);
    expect(copy.get('w', 'n00000001')).toEqual(loc(1));
  });

  it('tracks changes until a quarter of the persisted records, then asks for a base', () => {
    const d = new KeyDirectory();
    expect(d.changes()).toBeUndefined(); // never persisted: a base
    for (let i = 0; i < 20_000; i++) d.set('w', `k${i}`, loc(i));
    d.persisted(true);
    for (let i = 0; i < 4_000; i++) d.set('w', `k${i}`, loc(i + 1));
    expect(d.changes()?.ids.get('w')?.size).toBe(4_000);
    d.persisted(false);
    for (let i = 0; i < 2_000; i++) d.delete('w', `k${i + 10_000}`);
    expect(d.changes()).toBeUndefined(); // 6,000 rows of runs > 5,000
  });

  it('seals a snapshot in parts bound to their page ids, order and count', async () => {
    const partBytes = 4096;
    const plain = new Uint8Array(partBytes * 2 + 5).map((_, i) => i * 7);
    const key = new Uint8Array(32).fill(9);
    const pages: { id: number; bytes: Uint8Array }[] = [];
    let next = 40;
    const ids = await sealSnapshot(
      { pageId: () => next++, addPage: (p) => pages.push(p) },
      key,
      plain,
      undefined,
      partBytes,
    );
    expect(ids).toEqual([40, 41, 42]);
    expect(pages.every((p) => pageKind(p.bytes) === 'directory')).toBe(true);
    const bytes = pages.map((p) => p.bytes);
    expect(openSnapshot(key, ids, bytes)).toEqual(plain);
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as PqdbError).code;
      }
      return 'opened';
    };
    expect(code(() => openSnapshot(key, [41, 40, 42], [bytes[1], bytes[0], bytes[2]]))).toBe('CORRUPTION');
    expect(code(() => openSnapshot(key, [40, 41], bytes.slice(0, 2)))).toBe('CORRUPTION');
    expect(code(() => openSnapshot(key, [40, 41, 43], bytes))).toBe('AUTH_FAILED');
    const flipped = bytes.map((b) => b.slice());
    flipped[1][100] ^= 1;
    expect(code(() => openSnapshot(key, ids, flipped))).toBe('AUTH_FAILED');
    expect(code(() => openSnapshot(new Uint8Array(32), ids, bytes))).toBe('AUTH_FAILED');
  });

  it('refuses a snapshot whose columns do not add up', async () => {
    const d = new KeyDirectory();
    for (let i = 0; i < 10; i++) d.set('w', `k${i}`, loc(i));
    const { bytes } = await encodeSnapshot(d, 'base', 5, {});
    expect(() => decodeSnapshot(bytes.slice(0, bytes.length - 8))).toThrow(/declares/);
    const longer = new Uint8Array(bytes.length + 8);
    longer.set(bytes);
    expect(() => decodeSnapshot(longer)).toThrow(PqdbError);
  });
});

const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { text: 'string' } as const;

describe('opening from the persisted directory', () => {
  async function fixture() {
    const medium = new MemoryMedium();
    const open = docsOpener(medium, { recipient: r, signer }, schema);
    const { store, docs } = await open(true);
    for (let b = 0; b < 4; b++)
      await store.batch((tx) => {
        for (let i = 0; i < 500; i++) tx.put(docs, `d${b * 500 + i}`, { text: `word${i % 13} batch${b}` });
      });
    await store.checkpoint(); // a base
    for (let i = 0; i < 50; i++) await docs.put(`d${i}`, { text: `updated${i}` });
    await docs.delete('d1999');
    await store.checkpoint(); // a run
    await docs.put('late', { text: 'after the last checkpoint' });
    await docs.delete('d1998');
    await store.close();
    return { medium, open };
  }

  it('gives the records, counts, ids and search results of the store as written', async () => {
    const { open } = await fixture();
    const { store, docs } = await open();
    expect(store.recovery.clean).toBe(true);
    expect(docs.size).toBe(2000 - 2 + 1);
    expect(await docs.get('d3')).toEqual({ text: 'updated3' });
    expect(await docs.get('d1505')).toEqual({ text: 'word5 batch3' });
    expect(await docs.get('d1999')).toBeUndefined();
    expect(await docs.get('d1998')).toBeUndefined();
    expect(await docs.get('late')).toEqual({ text: 'after the last checkpoint' });
    expect((await docs.search('updated7')).map((h) => h.id)).toEqual(['d7']);
    expect((await docs.search('checkpoint')).map((h) => h.id)).toEqual(['late']);
    // Writes after the open, a checkpoint and a second open still agree.
    await docs.put('d0', { text: 'again' });
    await store.checkpoint();
    await store.close();
    const again = await open();
    expect(await again.docs.get('d0')).toEqual({ text: 'again' });
    expect(again.docs.size).toBe(1999);
    await again.store.close();
  });

  it('loads a partition of the base on first use: an open reads none, a count none, a get one', async () => {
    const medium = new MemoryMedium();
    // No lexical index: one would read the records written since the base as the open brings it up to date.
    const open = async (create = false) => {
      const store = await openStore({
        storage: await openMemoryPageStore({ medium }),
        create,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      });
      return { store, docs: store.collection('docs', { schema }) };
    };
    const first = await open(true);
    for (let b = 0; b < 10; b++)
      await first.store.batch((tx) => {
        for (let i = 0; i < 1000; i++) tx.put(first.docs, `d${b * 1000 + i}`, { text: `w${i % 7}` });
      });
    await first.store.checkpoint(); // a base of 10,000 rows: 16 partitions (PART_ROWS 1,024)
    await first.docs.put('d5', { text: 'changed after the base' });
    await first.docs.delete('d6');
    await first.docs.put('fresh', { text: 'new after the base' });
    await first.store.close();
    const { store, docs } = await open();
    const directory = engineOf(store).directory;
    const parts = directory.unloadedParts;
    expect(parts).toBe(16);
    expect(docs.size).toBe(10_000); // loads the partitions the later commits wrote to, at most 3
    const left = directory.unloadedParts;
    expect(left).toBeGreaterThanOrEqual(1);
    expect(await docs.get('d5')).toEqual({ text: 'changed after the base' });
    expect(await docs.get('d6')).toBeUndefined();
    expect(docs.has('fresh')).toBe(true);
    for (let i = 0; i < 10_000; i += 37)
      if (i !== 6 && i !== 5) expect(await docs.get(`d${i}`)).toEqual({ text: `w${(i % 1000) % 7}` });
    expect(directory.unloadedParts).toBe(0);
    await store.close();
    // What visits every record loads the partitions in steps, letting others run between them.
    const stepped = await open();
    const d2 = engineOf(stepped.store).directory;
    let steps = 0;
    await d2.loadAllInSteps(async () => void steps++);
    expect([steps, d2.unloadedParts]).toEqual([16, 0]);
    expect(stepped.docs.size).toBe(10_000);
    await stepped.store.close();
    // The same through a page store that cannot read synchronously: every partition at the open.
    const hidden = docsOpener(medium, { recipient: r, signer }, schema, {
      wrap: (p) =>
        new Proxy(p, {
          get: (t, k) =>
            k === 'supports'
              ? { ...t.supports, blockingReads: false }
              : typeof t[k as keyof typeof t] === 'function'
                ? (t[k as keyof typeof t] as (...a: unknown[]) => unknown).bind(t)
                : t[k as keyof typeof t],
        }),
    });
    const eager = await hidden();
    expect(engineOf(eager.store).directory.unloadedParts).toBe(0);
    expect(eager.docs.size).toBe(10_000);
    expect(await eager.docs.get('d9999')).toEqual({ text: 'w5' });
    await eager.store.close();
  });

  it('refuses a base partition that is missing or altered when it loads, and verifyStore names it', async () => {
    const medium = new MemoryMedium();
    const open = docsOpener(medium, { recipient: r, signer }, schema);
    const first = await open(true);
    for (let b = 0; b < 10; b++)
      await first.store.batch((tx) => {
        for (let i = 0; i < 1000; i++) tx.put(first.docs, `d${b * 1000 + i}`, { text: `w${i % 7}` });
      });
    await first.store.checkpoint();
    const partPages = [...engineOf(first.store).directory.partPages];
    await first.store.close();
    expect(partPages.length).toBe(16);
    const setPage = (id: number, bytes: Uint8Array) => medium.pages.set(id, { bytes, crc: crc32c(bytes) });
    const saved = new Map(medium.pages);
    const restore = () => {
      medium.pages.clear();
      for (const [k, v] of saved) medium.pages.set(k, v);
    };
    const outcome = async (edit: () => void) => {
      edit();
      const { store, docs } = await open();
      const codes: string[] = [];
      for (let i = 0; i < 10_000; i += 101)
        await docs.get(`d${i}`).then(
          () => undefined,
          (e: unknown) => codes.push((e as PqdbError).code),
        );
      await store.close();
      const pages = await openMemoryPageStore({ medium });
      const report = await verifyStore(pages, { unlock: r.secretKey });
      await pages.close();
      restore();
      return { codes: [...new Set(codes)], ok: report.ok, where: report.problems.map((p) => p.where) };
    };
    const missing = await outcome(() => medium.pages.delete(partPages[1]));
    expect(missing.codes).toEqual(['CORRUPTION']);
    expect(missing.ok).toBe(false);
    const flipped = await outcome(() => {
      const p = medium.pages.get(partPages[2])!.bytes.slice();
      p[p.length - 30] ^= 1;
      setPage(partPages[2], p);
    });
    expect(flipped.codes).toEqual(['AUTH_FAILED']);
    expect(flipped.ok).toBe(false);
    // One partition's page in another's place: bound to its page id, so it does not open there.
    const swapped = await outcome(() => setPage(partPages[0], medium.pages.get(partPages[3])!.bytes));
    expect(swapped.codes).toEqual(['AUTH_FAILED']);
    expect(swapped.ok).toBe(false);
    expect(DIRECTORY_PART_BYTES).toBeGreaterThan(100_000);
    // Writes go on with a partition missing (automatic compaction, on by default, loads none after
    // a durable commit); the records are there after a reopen. The missing partition is one the
    // writes do not reach (a reopen loads the partitions written to since the base).
    const bits = Math.log2(partPages.length);
    const written = new Set(
      Array.from({ length: 40 }, (_, i) => {
        const b = new TextEncoder().encode(`d${i}`);
        return partOf(fnv1a(b, 0, b.length), bits);
      }),
    );
    const untouched = partPages.findIndex((_, p) => !written.has(p));
    expect(untouched).toBeGreaterThanOrEqual(0);
    medium.pages.delete(partPages[untouched]);
    const writing = await openStore({
      storage: await openMemoryPageStore({ medium }),
      recipients: [r.publicKey],
      unlock: r.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
    });
    const w = writing.collection('docs', { schema, index: { text: ['text'] } });
    for (let i = 0; i < 40; i++) await w.put(`d${i}`, { text: `rewritten ${i}` });
    await writing.close();
    const after = await open();
    expect(await after.docs.get('d39')).toEqual({ text: 'rewritten 39' });
    await after.store.close();
  });

  it('a collection first written after an empty base comes back from the run that holds it', async () => {
    const medium = new MemoryMedium();
    const open = docsOpener(medium, { recipient: r, signer }, schema);
    const first = await open(true);
    await first.store.checkpoint(); // a base without records
    await first.docs.put('d1', { text: 'harbour lights' });
    await first.store.checkpoint(); // a run onto an empty table
    await first.store.close();
    const again = await open();
    expect(await again.docs.get('d1')).toEqual({ text: 'harbour lights' });
    expect((await again.docs.search('harbour')).map((h) => h.id)).toEqual(['d1']);
    await again.store.close();
  });

  it('refuses a missing, altered or older directory page, and a missing commit page it covers', async () => {
    const { medium, open } = await fixture();
    const kinds = [...medium.pages].map(([id, p]) => [id, pageKind(p.bytes)] as const);
    const setPage = (id: number, bytes: Uint8Array) => medium.pages.set(id, { bytes, crc: crc32c(bytes) });
    const directoryPages = kinds.filter(([, k]) => k === 'directory').map(([id]) => id);
    const commitPages = kinds.filter(([, k]) => k === 'commit').map(([id]) => id);
    expect(directoryPages.length).toBeGreaterThanOrEqual(2);
    const attempt = async (edit: () => void) => {
      const saved = new Map(medium.pages);
      edit();
      try {
        const { store } = await open();
        await store.close();
        return 'opened';
      } catch (e) {
        medium.locked = false; // the page store a failed open leaves to its caller
        return (e as PqdbError).code;
      } finally {
        medium.pages.clear();
        for (const [k, v] of saved) medium.pages.set(k, v);
      }
    };
    expect(await attempt(() => medium.pages.delete(directoryPages[0]))).toBe('CORRUPTION');
    expect(
      await attempt(() => {
        const p = medium.pages.get(directoryPages[1])!.bytes.slice();
        p[p.length - 20] ^= 1;
        setPage(directoryPages[1], p);
      }),
    ).toBe('AUTH_FAILED');
    expect(
      await attempt(() => {
        setPage(directoryPages[1], medium.pages.get(directoryPages[0])!.bytes);
      }),
    ).not.toBe('opened');
    expect(await attempt(() => medium.pages.delete(commitPages[0]))).toBe('CORRUPTION');
  });
});
