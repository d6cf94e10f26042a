// Secondary indexes (src/engine/field-index.ts, field-indexes.ts, query.ts): single and compound
// indexes declared with a collection, queried by equality, range, prefix and any-of, in order or
// reversed, with offset, limit and filter — checked against brute force over random puts, updates
// and deletes, across a reopen (built again from the records), and never on the medium.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, openMemoryPageStore, verifyStore } from '../src/index';
import { pageKind } from '../src/engine/page-format';
import { crc32c } from '../src/_crc32c';
import { MemoryMedium } from '../src/storage/memory';
import { storeOpener } from './support/memory-docs';
import { FieldIndex, compareKeys } from '../src/engine/field-index';
import { Rng } from './cases/_util';

const r = generateRecipient('classical');
const schema = { lemma: 'string', pos: 'string', offset: 'integer', note: 'string?' } as const;
type Syn = { lemma: string; pos: string; offset: number; note?: string };
const POS = ['n', 'v', 'a', 'r', 's'];

const cmp = (a: unknown[], b: unknown[]) => compareKeys(a as never, b as never);
const indexPages = (m: MemoryMedium) => [...m.pages].filter(([, p]) => pageKind(p.bytes) === 'index');

describe('secondary indexes', () => {
  it('answer equals, between, startsWith, anyOf and orderBy as brute force does, through updates and deletes', async () => {
    const medium = new MemoryMedium();
    const open = storeOpener(r, medium);
    const store = await open();
    const c = store.collection('syn', { schema, index: { by: ['pos', ['pos', 'offset'], 'lemma'] } });
    const rng = new Rng(32);
    const model = new Map<string, Syn>();
    const word = () => ['ab', 'abc', 'b', 'ba', 'cab', 'c', 'zz'][rng.int(7)] + rng.int(30);
    for (let round = 0; round < 6; round++) {
      await store.batch((tx) => {
        for (let i = 0; i < 150; i++) {
          const id = `s${rng.int(400)}`;
          if (rng.int(6) === 0 && model.has(id)) {
            tx.delete(c, id);
            model.delete(id);
            continue;
          }
          const v: Syn = { lemma: word(), pos: POS[rng.int(5)], offset: rng.int(5000) };
          if (rng.int(3) === 0) v.note = 'n';
          tx.put(c, id, v);
          model.set(id, v);
        }
      });
      const ids = (q: { toArray(): Promise<{ id: string }[]> }) => q.toArray().then((l) => l.map((x) => x.id));
      const sorted = (keyOf: (v: Syn) => unknown[], keep: (v: Syn) => boolean) =>
        [...model]
          .filter(([, v]) => keep(v))
          .sort(([ia, a], [ib, b]) => cmp(keyOf(a), keyOf(b)) || (ia < ib ? -1 : ia > ib ? 1 : 0))
          .map(([id]) => id);
      const pos = POS[round % 5];
      expect(await ids(c.where('pos').equals(pos))).toEqual(
        sorted(
          (v) => [v.pos],
          (v) => v.pos === pos,
        ),
      );
      expect(await ids(c.where(['pos', 'offset']).between([pos, 1000], [pos, 2000]))).toEqual(
        sorted(
          (v) => [v.pos, v.offset],
          (v) => v.pos === pos && v.offset >= 1000 && v.offset < 2000,
        ),
      );
      expect(
        await ids(
          c.where(['pos', 'offset']).between([pos, 1000], [pos, 2000], { lower: false, upper: true }).reverse(),
        ),
      ).toEqual(
        sorted(
          (v) => [v.pos, v.offset],
          (v) => v.pos === pos && v.offset > 1000 && v.offset <= 2000,
        ).reverse(),
      );
      expect(await ids(c.where('lemma').startsWith('ab'))).toEqual(
        sorted(
          (v) => [v.lemma],
          (v) => v.lemma.startsWith('ab'),
        ),
      );
      expect(await ids(c.where('pos').anyOf(['v', 'n', 'v']))).toEqual(
        sorted(
          (v) => [v.pos],
          (v) => v.pos === 'n' || v.pos === 'v',
        ),
      );
      const all = sorted(
        (v) => [v.lemma],
        () => true,
      );
      expect(await ids(c.orderBy('lemma').reverse().offset(5).limit(20))).toEqual(all.reverse().slice(5, 25));
      expect(
        await ids(
          c
            .where(['pos', 'offset'])
            .equals(pos)
            .filter((v) => v.note === 'n')
            .limit(7),
        ),
      ).toEqual(
        sorted(
          (v) => [v.pos, v.offset],
          (v) => v.pos === pos && v.note === 'n',
        ).slice(0, 7),
      );
      // A single-field query may use a compound index that begins with the field.
      const prefixOnly = store.collection('syn', { schema, index: { by: ['pos', ['pos', 'offset'], 'lemma'] } });
      expect(prefixOnly).toBe(c);
    }
    await store.close();

    // Reopened without options: the stored indexes, built again from the records.
    const again = await open();
    const d = again.collection('syn');
    const ns = await d.where('pos').equals('n').toArray();
    expect(ns.map((x) => x.id)).toEqual(
      [...model]
        .filter(([, v]) => v.pos === 'n')
        .map(([id]) => id)
        .sort(),
    );
    for (const { id, value } of ns) expect(value).toEqual(model.get(id));
    expect(() => d.where('offset')).toThrow(/no index on offset/);
    await again.close();
    // Nothing of an index reaches the medium: a lemma written only in records is nowhere in the clear.
    const needle = new TextEncoder().encode(ns[0]?.value.lemma as string);
    const hits = [...medium.pages.values()].filter((p) => {
      for (let i = 0; i + needle.length <= p.bytes.length; i++)
        if (needle.every((b, k) => p.bytes[i + k] === b)) return true;
      return false;
    });
    expect(hits).toEqual([]);
  });

  it('FieldIndex: dead entries skipped, runs merged, ties in id order', () => {
    const ix = new FieldIndex(['k']);
    for (let i = 0; i < 5000; i++) ix.update(`id${i}`, { k: i % 100 });
    for (let i = 0; i < 5000; i += 2) ix.update(`id${i}`, { k: 1000 + (i % 7) });
    for (let i = 1; i < 5000; i += 4) ix.update(`id${i}`, undefined);
    expect(ix.size).toBe(5000 - 1250);
    const got = [...ix.ids({ lower: [1000], upper: [1000] })];
    expect(got).toEqual(
      Array.from({ length: 5000 }, (_, i) => i)
        .filter((i) => i % 2 === 0 && i % 7 === 0)
        .map((i) => `id${i}`)
        .sort(),
    );
    expect([...ix.ids({ lower: [50], upper: [50] })]).toEqual(
      ['id1050', 'id1850', 'id2650', 'id3450', 'id4250', 'id450', 'id50'].filter(
        (id) => Number(id.slice(2)) % 4 !== 1 && Number(id.slice(2)) % 2 === 1,
      ),
    );
  });
});

describe('secondary indexes persisted sealed at checkpoints', () => {
  const signer = generateSigner();
  const signedOpener = (medium: MemoryMedium) => {
    const open = storeOpener(r, medium, { signer: signer.secretKey, signerPublicKey: signer.publicKey });
    return async () => {
      const store = await open();
      return { store, c: store.collection('syn', { schema, index: { by: ['pos', ['pos', 'offset']] } }) };
    };
  };
  const byPos = (model: Map<string, Syn>, pos: string) =>
    [...model]
      .filter(([, v]) => v.pos === pos)
      .map(([id]) => id)
      .sort();

  it('loads from its sealed page after a reopen, takes the writes since, verifies, and drops a stale page', async () => {
    const medium = new MemoryMedium();
    const open = signedOpener(medium);
    const model = new Map<string, Syn>();
    let { store, c } = await open();
    await store.batch((tx) => {
      for (let i = 0; i < 500; i++) {
        const v = { lemma: `w${i}`, pos: POS[i % 5], offset: i };
        tx.put(c, `s${i}`, v);
        model.set(`s${i}`, v);
      }
    });
    expect((await c.where('pos').equals('n').toArray()).length).toBe(100);
    await store.checkpoint(); // seals the loaded indexes
    expect(indexPages(medium)).toHaveLength(1);
    await store.close();

    ({ store, c } = await open());
    await c.put('s1', { lemma: 'moved', pos: 'n', offset: 9999 }); // written before the index loads
    model.set('s1', { lemma: 'moved', pos: 'n', offset: 9999 });
    await c.delete('s0');
    model.delete('s0');
    expect((await c.where('pos').equals('n').toArray()).map((x) => x.id)).toEqual(byPos(model, 'n'));
    expect((await c.where(['pos', 'offset']).between(['n', 9000], ['n', 10000]).toArray()).map((x) => x.id)).toEqual([
      's1',
    ]);
    await store.checkpoint();
    await store.close();
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: signer.publicKey });
    await pages.close();
    expect(report.problems).toEqual([]);
    expect(report.counts.indexPages).toBe(1);

    // Written while not loaded, then persisted: the page would miss those writes, so it is dropped.
    ({ store, c } = await open());
    await c.put('s2', { lemma: 'late', pos: 'v', offset: 1 });
    model.set('s2', { lemma: 'late', pos: 'v', offset: 1 });
    await store.checkpoint();
    expect(indexPages(medium)).toHaveLength(0);
    await store.close();
    ({ store, c } = await open());
    expect((await c.where('pos').equals('v').toArray()).map((x) => x.id)).toEqual(byPos(model, 'v'));
    await store.checkpoint();
    expect(indexPages(medium)).toHaveLength(1);
    await store.close();
    // Sealed: no value of an index is in the clear on the medium.
    const needle = new TextEncoder().encode('moved');
    for (const [, p] of medium.pages)
      for (let i = 0; i + needle.length <= p.bytes.length; i++)
        expect(needle.every((b, k) => p.bytes[i + k] === b)).toBe(false);
  });

  it('a sealed index page altered on the medium fails the query and the verifier', async () => {
    const medium = new MemoryMedium();
    const open = signedOpener(medium);
    let { store, c } = await open();
    await c.put('a', { lemma: 'x', pos: 'n', offset: 1 });
    await c.where('pos').equals('n').toArray();
    await store.checkpoint();
    await store.close();
    const [id, stored] = indexPages(medium)[0];
    const bytes = stored.bytes.slice();
    bytes[bytes.length - 3] ^= 1;
    medium.pages.set(id, { bytes, crc: crc32c(bytes) });
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: signer.publicKey });
    await pages.close();
    expect(report.ok).toBe(false);
    ({ store, c } = await open());
    await expect(c.where('pos').equals('n').toArray()).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await store.close();
  });
});

describe('an index added to a populated collection', () => {
  it('is built in the background with progress, reads served meanwhile', async () => {
    const medium = new MemoryMedium();
    const open = storeOpener(r, medium);
    const store = await open();
    const plain = store.collection('syn', { schema });
    for (let i = 0; i < 6000; i += 1000)
      await store.batch((tx) => {
        for (let k = i; k < i + 1000; k++) tx.put(plain, `s${k}`, { lemma: `w${k}`, pos: POS[k % 5], offset: k });
      });
    await store.close();
    const again = await open();
    const c = again.collection('syn', { schema, index: { by: ['offset'] } });
    const progress: { done: number; total: number }[] = [];
    const order: string[] = [];
    const built = c.buildIndexes({ onProgress: (p) => progress.push(p) }).then(() => order.push('built'));
    const read = c.get('s3').then(() => order.push('read'));
    await Promise.all([built, read]);
    expect(order).toEqual(['read', 'built']);
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toEqual({ done: 6000, total: 6000 });
    expect((await c.where('offset').between(100, 105).toArray()).map((x) => x.id)).toEqual([
      's100',
      's101',
      's102',
      's103',
      's104',
    ]);
    await again.close();
  });
});

describe('the raw bytes of a store with secondary indexes', () => {
  it('hold no collection name, field name, id, value or index key in the clear', async () => {
    const signer = generateSigner();
    const medium = new MemoryMedium();
    const store = await storeOpener(r, medium, { signer: signer.secretKey, signerPublicKey: signer.publicKey })();
    const c = store.collection('zcollectionq', {
      schema: { zfieldkind: 'string', zfieldrank: 'integer', zfieldnote: 'string' },
      index: { text: ['zfieldnote'], by: ['zfieldkind', ['zfieldkind', 'zfieldrank']] },
    });
    const ranks = [987_654_321, 123_456_789, 555_000_111];
    for (let i = 0; i < 3; i++)
      await c.put(`zidentq${i}`, { zfieldkind: `zkindvalue${i}`, zfieldrank: ranks[i], zfieldnote: `zwordnote${i}` });
    expect(
      (await c.where(['zfieldkind', 'zfieldrank']).between(['zkindvalue1', 0], ['zkindvalue1', 2e9]).toArray()).length,
    ).toBe(1);
    expect((await c.search('zwordnote2')).length).toBe(1);
    await store.checkpoint();
    await store.close();
    const enc = new TextEncoder();
    const f64 = (n: number) => {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, n);
      return b;
    };
    const needles: [string, Uint8Array][] = [
      ['zcollectionq', 'zfieldkind', 'zfieldrank', 'zfieldnote', 'zidentq', 'zkindvalue', 'zwordnote'].map(
        (s) => [s, enc.encode(s)] as [string, Uint8Array],
      ),
      ranks.map((n) => [`rank ${n} as float64`, f64(n)] as [string, Uint8Array]),
    ].flat();
    const blobs = [...[...medium.pages.values()].map((p) => p.bytes), medium.manifest!.bytes];
    const hits: string[] = [];
    for (const [what, needle] of needles)
      for (const b of blobs)
        for (let i = 0; i + needle.length <= b.length; i++)
          if (needle.every((x, k) => b[i + k] === x)) {
            hits.push(what);
            break;
          }
    expect(indexPages(medium).length).toBeGreaterThanOrEqual(2); // the lexical index's and the secondary indexes'
    expect(hits).toEqual([]);
  });
});
