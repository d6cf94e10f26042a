// How a migration reads and writes pages (docs/migration.md): the copy and the verification read
// each commit page once, outside the page cache (PageCache.peek, PagePass), the verification in
// page order (byPage); a copy chunk seals its records ahead with the commit salt its page will
// carry (Draft.commitSalt, RecordIO.putSealed), into buffers reused from chunk to chunk
// (CopyBuffers). Then the accounting of a migration in chunks that straddle source pages while
// writes update, delete and insert records ahead of and behind the copy, on memory, node-fs and
// IndexedDB.
import { describe, it, expect } from 'vitest';
import { openMemoryPageStore, generateRecipient, verifyStore, Store } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { CommitPipeline, type AppliedCommit } from '../src/engine/commit';
import { KeyRing } from '../src/engine/keys';
import { Registry } from '../src/engine/registry';
import { newManifest, STORE_ID_LABEL } from '../src/engine/manifest';
import { hex } from '../src/_encoding';
import { PageCache } from '../src/engine/page-cache';
import { RecordIO } from '../src/engine/records';
import { pageSalt } from '../src/engine/page-format';
import { PagePass } from '../src/engine/migration/pages';
import { CopyBuffers } from '../src/engine/migration/copy';
import { byPage } from '../src/engine/migration/run';
import type { PageStore } from '../src/storage/page-store';
import { STORE_FIXTURES, perTest } from './support/store-fixtures';

const r = generateRecipient('classical');

/** A memory page store that counts the pages read from it. */
async function countingPages(): Promise<{ pages: PageStore; reads: number[] }> {
  const pages = await openMemoryPageStore({ medium: new MemoryMedium() });
  const reads: number[] = [];
  const readPage = pages.readPage.bind(pages);
  pages.readPage = (id: number) => (reads.push(id), readPage(id));
  return { pages, reads };
}

describe('byPage', () => {
  it('lists records page by page, ascending, in their order within a page', () => {
    let x = 7;
    const pageIds = Uint32Array.from(
      { length: 5000 },
      () => 100 + ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) % 37),
    );
    const { order, pages, starts } = byPage(pageIds);
    expect([...pages]).toEqual([...new Set(pageIds)].sort((a, b) => a - b));
    expect(starts.length).toBe(pages.length + 1);
    expect(starts[pages.length]).toBe(pageIds.length);
    expect([...order].sort((a, b) => a - b)).toEqual([...pageIds.keys()]); // each record once
    for (let p = 0; p < pages.length; p++) {
      const records = [...order.subarray(starts[p], starts[p + 1])];
      expect(records.every((i) => pageIds[i] === pages[p])).toBe(true);
      expect(records).toEqual([...records].sort((a, b) => a - b));
    }
  });

  it('handles no records and a single page', () => {
    expect(byPage(new Uint32Array(0))).toEqual({
      order: new Uint32Array(0),
      pages: new Uint32Array(0),
      starts: new Uint32Array(1),
    });
    const one = byPage(Uint32Array.of(9, 9, 9));
    expect([...one.order]).toEqual([0, 1, 2]);
    expect([...one.pages]).toEqual([9]);
    expect([...one.starts]).toEqual([0, 3]);
  });
});

describe('pages read outside the cache', () => {
  it('PageCache.peek serves a cached page and caches none it reads', async () => {
    const { pages, reads } = await countingPages();
    await pages.commit({ pages: [1, 2].map((id) => ({ id, bytes: Uint8Array.of(id, 0, 0) })), deletes: [] });
    const cache = new PageCache(pages);
    expect(await cache.peek(1)).toEqual(Uint8Array.of(1, 0, 0));
    expect(await cache.peek(1)).toEqual(Uint8Array.of(1, 0, 0));
    expect(reads).toEqual([1, 1]); // not cached
    await cache.get(2);
    expect(await cache.peek(2)).toEqual(Uint8Array.of(2, 0, 0));
    expect(reads).toEqual([1, 1, 2]); // served from the cache
    await expect(cache.peek(3)).rejects.toMatchObject({ code: 'CORRUPTION' });
  });

  it('PagePass reads each page once, reads ahead, and reports a failed read-ahead only when asked', async () => {
    const { pages, reads } = await countingPages();
    await pages.commit({ pages: [1, 2, 3].map((id) => ({ id, bytes: Uint8Array.of(id) })), deletes: [] });
    const pass = new PagePass(new PageCache(pages));
    expect(await pass.get(1)).toEqual(Uint8Array.of(1));
    pass.readAhead(2);
    expect(await pass.get(1)).toEqual(Uint8Array.of(1)); // the page held; the read ahead stays
    expect(await pass.get(2)).toEqual(Uint8Array.of(2));
    expect(await pass.get(2)).toEqual(Uint8Array.of(2));
    expect(await pass.get(3)).toEqual(Uint8Array.of(3));
    expect(reads).toEqual([1, 2, 3]);
    pass.readAhead(9); // missing: nothing surfaces unless it is asked for
    await expect(pass.get(9)).rejects.toMatchObject({ code: 'CORRUPTION' });
    pass.readAhead(8);
    expect(await pass.get(1)).toEqual(Uint8Array.of(1));
  });
});

describe('CopyBuffers', () => {
  it('hands out disjoint parts of its arena until reset, then the same ones again', () => {
    const b = new CopyBuffers();
    const parts = [100, 30_000, 30_000, 10_000, 200].map((n) => b.take(n));
    expect(parts.map((p) => p.length)).toEqual([100, 30_000, 30_000, 10_000, 200]);
    parts.forEach((p, i) => p.fill(i + 1));
    parts.forEach((p, i) => expect(p.every((x) => x === i + 1)).toBe(true)); // none overlaps another
    const big = b.take(100_000); // beyond a block: its own
    expect(big.length).toBe(100_000);
    b.reset();
    const again = b.take(100);
    expect(again.buffer).toBe(parts[0].buffer);
    expect(again.byteOffset).toBe(parts[0].byteOffset);
  });

  it('keeps one plaintext buffer, grown (and the old one wiped) when a record needs more', () => {
    const b = new CopyBuffers();
    const small = b.plaintext(10);
    expect(b.plaintext(100)).toBe(small);
    small.fill(7);
    const large = b.plaintext(small.length + 1);
    expect(large.length).toBeGreaterThan(small.length);
    expect(small.every((x) => x === 0)).toBe(true);
  });
});

describe('records sealed ahead of their commit page', () => {
  async function pipelineOver() {
    const pages = await openMemoryPageStore({ medium: new MemoryMedium() });
    const keys = new KeyRing();
    keys.createGeneration(2, [r.publicKey]);
    keys.unlock(r.secretKey);
    const registry = new Registry({ active: 2 });
    const manifest = newManifest(hex(keys.storeKey(STORE_ID_LABEL, 16)), keys.records(), registry.records(), 2, [
      r.publicKey,
    ]);
    const pipeline = new CommitPipeline(pages, keys, manifest, registry);
    const records = new RecordIO(new PageCache(pages), keys, () => pipeline.registry);
    return { pipeline, keys, records };
  }

  it('carry the salt the draft drew, and open from the page', async () => {
    const { pipeline, keys, records } = await pipelineOver();
    let applied: AppliedCommit | undefined;
    pipeline.on({ applied: (c) => void (applied = c) });
    const plaintext = new TextEncoder().encode('sealed before the page');
    let salt: Uint8Array | undefined;
    let sequence = 0;
    await pipeline.run((d) => {
      salt = d.commitSalt();
      expect(d.commitSalt()).toBe(salt); // drawn once per draft
      sequence = d.sequences(1);
      const spec = { collection: 'c', id: 'a', suite: 2, generation: keys.current(), sequence, governance: '{}' };
      const op = records.putSealed({ ...spec, plaintext }, salt);
      plaintext.fill(0); // sealed already: the caller may wipe it at once
      d.write(op, { kind: 'put', collection: 'c', id: 'a' });
    });
    const page = applied!.page!;
    expect(pageSalt(page.bytes)).toEqual(salt);
    const op = page.ops[0];
    if (op.kind !== 'put') throw new Error('expected a put');
    const loc = {
      leafIndex: 0,
      generation: keys.current(),
      pageId: page.id,
      offset: op.offset,
      length: op.length,
      sequence,
      suite: 2,
      governance: '{}',
    };
    expect(new TextDecoder().decode(records.openIn('read', page.bytes, 'c', 'a', loc))).toBe('sealed before the page');
    expect(() => records.openIn('read', page.bytes.subarray(0, op.offset + 1), 'c', 'a', loc)).toThrow(
      expect.objectContaining({ code: 'CORRUPTION' }),
    );
  });

  it('refuse a page of another salt: the commit fails and nothing is installed', async () => {
    const { pipeline, keys, records } = await pipelineOver();
    const before = JSON.stringify(pipeline.manifest);
    await expect(
      pipeline.run((d) => {
        const other = new Uint8Array(16).fill(1); // not the draft's
        const spec = { collection: 'c', id: 'a', suite: 2, generation: keys.current(), sequence: d.sequences(1) };
        d.write(records.putSealed({ ...spec, governance: '{}', plaintext: Uint8Array.of(1) }, other), {
          kind: 'put',
          collection: 'c',
          id: 'a',
        });
      }),
    ).rejects.toThrow(/another salt/);
    expect(JSON.stringify(pipeline.manifest)).toBe(before);
  });
});

describe.each(STORE_FIXTURES)('a migration reading pages in order while writes go on (%s)', (_name, factory) => {
  const fresh = perTest(factory);
  const schema = { n: 'integer', s: 'string' } as const;
  const id = (i: number) => `r${String(i).padStart(5, '0')}`;

  it.each([
    ['chunks that straddle source pages', 300],
    ['the default chunk', undefined],
  ])('accounts for every record with %s', async (_what, chunkRecords) => {
    const f = await fresh();
    const open = (create = false) =>
      f.open({
        create,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        suite: 'gcmsiv-hkdf256',
        autoCheckpoint: false,
      });
    const store = await open(true);
    const c = store.collection('c', { schema });
    const N = 5000;
    const model = new Map<string, { n: number; s: string }>();
    for (let i = 0; i < N; i += 250)
      // source pages of 250 records
      await store.batch((tx) => {
        for (let k = i; k < i + 250; k++) {
          tx.put(c, id(k), { n: k, s: `value ${k}` });
          model.set(id(k), { n: k, s: `value ${k}` });
        }
      });
    // After the first chunk: updates and deletes behind the cursor (copied already: counted as
    // copied) and ahead of it (superseded, deleted), and inserts, all committed between chunks.
    let writes: Promise<unknown> | undefined;
    let firstCopied = 0;
    const result = await store.migrate({
      to: 'cnsa2-gcm-hkdf384-commit',
      chunkRecords,
      onProgress: (p) => {
        if (writes !== undefined || p.phase !== 'copying') return;
        firstCopied = p.copied;
        // One batch: it commits before the next chunk, so the cursor stands where it stood here.
        writes = store.batch((tx) => {
          for (const k of [0, 1, 150, 251, N - 1, N - 300, N - 251, N - 250]) {
            model.set(id(k), { n: -k - 1, s: 'updated' });
            tx.put(c, id(k), { n: -k - 1, s: 'updated' });
          }
          for (const k of [2, 3, N - 2, N - 500, N - 499]) (model.delete(id(k)), tx.delete(c, id(k)));
          for (const k of [0, 1, 2])
            (model.set(`new${k}`, { n: k, s: 'new' }), tx.put(c, `new${k}`, { n: k, s: 'new' }));
        });
      },
    });
    await writes;
    expect(firstCopied).toBe(chunkRecords ?? 2048);
    expect(result).toMatchObject({
      phase: 'done',
      copied: N - 4 - 3, // every source record but those updated (4) or deleted (3) ahead of the copy
      superseded: 4,
      deleted: 3,
      withheld: 0,
      failed: 0,
      inserted: 3,
      total: N + 3,
    });
    expect(c.size).toBe(model.size);
    for (const [k, v] of model) expect(await c.get(k), k).toEqual(v);
    await store.close();
    const pages = await f.pages();
    try {
      expect((await verifyStore(pages, { unlock: r.secretKey })).problems).toEqual([]);
    } finally {
      await pages.close();
    }
  });
});

describe('the open after a migration', () => {
  it('without signer keys, the activation persists the key directory: a reopen reads none of the copy commits', async () => {
    const medium = new MemoryMedium();
    const open = async (create = false) => {
      const pages = await openMemoryPageStore({ medium });
      const reads: number[] = [];
      const readPage = pages.readPage.bind(pages);
      pages.readPage = (id: number) => (reads.push(id), readPage(id));
      const readPages = pages.readPages!.bind(pages);
      pages.readPages = (ids: readonly number[]) => (reads.push(...ids), readPages(ids));
      const store = await Store.open(pages, {
        create,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        autoCheckpoint: false,
      });
      return { store, reads };
    };
    const { store } = await open(true);
    const c = store.collection('c', { schema: { t: 'string' } });
    for (let i = 0; i < 20; i++)
      await store.batch((tx) => {
        for (let j = 0; j < 200; j++) tx.put(c, `k${i}-${j}`, { t: 'x'.repeat(40) });
      });
    await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit', chunkRecords: 256 });
    await store.close();
    const again = await open();
    // The persisted directory and its log pages, not the 4,000 records' 16 copy commits and 20 batches.
    expect(again.reads.length).toBeLessThan(12);
    expect(await again.store.collection('c', { schema: { t: 'string' } }).get('k19-199')).toEqual({
      t: 'x'.repeat(40),
    });
    await again.store.close();
  });
});
